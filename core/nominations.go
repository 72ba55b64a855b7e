package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// nominate sets the status.nominatedNodeName of pending pods that waited
// for a scale-up to the node of that group this iteration's decision placed
// them on, once it can take them, and withdraws nominations whose plan no
// longer stands (core/nominate decides; the actuator writes).
func (d *Decider) nominate(ctx context.Context, o *observation, plan *scaleup.Plan) {
	if !d.opts.NominatePlannedPods {
		return
	}
	in := nominate.Input{Pods: map[types.UID]nominate.Pod{}, Planned: map[types.UID]string{}, Usable: map[string]bool{},
		Standing: d.mem.nominations, Budget: d.opts.MaxBulkNominations}
	for name, obs := range o.observed {
		if obs.Ready {
			in.Usable[name] = true
		}
	}
	if plan != nil {
		for _, pl := range plan.OnExisting {
			p := pl.Info.GetPod()
			if pictured(p) || o.groupOfNode[pl.Node] == "" || o.groupOfNode[pl.Node] != d.plannedGroup(o, p.UID) {
				continue
			}
			in.Planned[p.UID] = pl.Node
			in.Pods[p.UID] = nominatedPod(p)
		}
	}
	for uid, n := range d.mem.nominations {
		if p, err := d.observer.pods.Pods(n.Namespace).Get(n.Name); err == nil && p.UID == uid {
			in.Pods[uid] = nominatedPod(p)
		}
	}
	res := nominate.Decide(in)
	if res.Deferred > 0 {
		klog.FromContext(ctx).V(2).Info("Nomination budget spent; the rest wait for the next iterations", "deferred", res.Deferred)
	}
	failed := d.actuator.Nominate(ctx, res.Clear, res.Set)
	res.Next.Failed(failed, in.Standing)
	d.mem.nominations = res.Next
}

// plannedGroup is the group whose new nodes a pod counts on: the one it
// waits for, or that of the node tidal nominated it to (the scheduler may
// have cleared the nomination, and the pod is pending again).
func (d *Decider) plannedGroup(o *observation, uid types.UID) string {
	if g := d.waiters.groupOf(uid); g != "" {
		return g
	}
	if n, ok := d.mem.nominations[uid]; ok {
		return o.groupOfNode[n.Node]
	}
	return ""
}

func nominatedPod(p *corev1.Pod) nominate.Pod {
	return nominate.Pod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Nominated: p.Status.NominatedNodeName}
}
