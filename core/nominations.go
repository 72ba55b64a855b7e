package core

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// nominate sets the status.nominatedNodeName of pending pods that waited
// for a scale-up to the node of that group this iteration's decision placed
// them on: a ready node, or a registered node still starting (so that the
// scheduler, which places pods the moment a node can take them, finds the
// nominations already there), and withdraws nominations whose plan no
// longer stands (core/nominate decides; the actuator writes).
func (d *Decider) nominate(ctx context.Context, o *observation, plan *scaleup.Plan) {
	if !d.opts.NominatePlannedPods {
		return
	}
	// Nominations cleared meanwhile are set again after these writes, from
	// what they leave standing (restoreNomination).
	d.nominating.Lock()
	defer d.nominating.Unlock()
	in := nominate.Input{Pods: map[types.UID]nominate.Pod{}, Planned: map[types.UID]string{}, Usable: d.nominationTargets(o),
		Standing: d.mem.nominations, Budget: d.opts.MaxBulkNominations}
	if plan != nil {
		for _, pl := range plan.OnExisting {
			p := pl.Info.GetPod()
			if pictured(p) || o.groupOfNode[pl.Node] == "" || o.groupOfNode[pl.Node] != d.plannedGroup(o, p.UID) {
				continue
			}
			in.Planned[p.UID] = pl.Node
			in.Pods[p.UID] = nominatedPod(p)
		}
		for _, p := range o.pending {
			if node, ok := plan.AwaitingOn[p.UID]; ok && !pictured(p) {
				in.Planned[p.UID] = node
				in.Pods[p.UID] = nominatedPod(p)
			}
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
	// The handlers know the nodes before the writes: the scheduler may
	// clear a nomination the moment it is written, before the rest are,
	// and that clearing must wake the loop to set it again.
	d.nominatedTo.set(res.Next)
	failed := d.actuator.Nominate(ctx, res.Clear, res.Set)
	res.Next.Failed(failed, in.Standing)
	d.mem.nominations = res.Next
	d.nominatedTo.set(res.Next)
}

// restoreRequest is a nomination tidal set that the scheduler cleared.
type restoreRequest struct {
	uid             types.UID
	namespace, name string
	node            string
}

// restoreQueue bounds the cleared nominations waiting to be set again; one
// that does not fit is left to the decision its clearing triggers.
const restoreQueue = 1024

// restores queues the cleared nominations to be set again at once, outside
// the iteration.
type restores chan restoreRequest

// queue adds a cleared nomination, unless the queue is full.
func (q restores) queue(r restoreRequest) {
	select {
	case q <- r:
	default:
	}
}

// run sets again the cleared nominations queued, one after another, until
// ctx ends; starting tells whether a node still starts.
func (q restores) run(ctx context.Context, d *Decider, starting func(*corev1.Node) bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-q:
			d.restoreNomination(ctx, r, starting)
		}
	}
}

// restoreNomination sets again at once the nomination the scheduler
// cleared from a node still starting, while it is tidal's standing one
// (nominate.Restore), without waiting for the next decision: until it is
// set again, the node's room holds nothing for the pod, and a node that
// becomes ready meanwhile may take other pods in its stead. starting tells
// whether a node still starts.
func (d *Decider) restoreNomination(ctx context.Context, r restoreRequest, starting func(*corev1.Node) bool) {
	d.nominating.Lock()
	defer d.nominating.Unlock()
	p, err := d.observer.pods.Pods(r.namespace).Get(r.name)
	if err != nil || p.UID != r.uid {
		return
	}
	n, err := d.nodes.Get(r.node)
	c, ok := nominate.Restore(d.mem.nominations, r.uid, nominatedPod(p), r.node, err == nil && starting(n))
	if !ok {
		return
	}
	d.actuator.Nominate(ctx, nil, []nominate.Change{c})
}

// clearedNominations maps the pending pods whose nomination tidal set has
// been cleared since to the node it named, while that node is one of
// starting. The scheduler clears a nomination each time it finds no node
// for the pod, as it does while the node is tainted, which says nothing of
// the plan: the decision places such pods on that node first, so they are
// nominated to it again and not to whichever node the packing reaches
// first. (Cleared from a node that can take pods, a nomination says the
// scheduler tried the pod there and failed: no preference is kept.)
func (d *Decider) clearedNominations(starting map[string]bool) map[types.UID]string {
	if !d.opts.NominatePlannedPods || len(d.mem.nominations) == 0 {
		return nil
	}
	out := map[types.UID]string{}
	for uid, n := range d.mem.nominations {
		p, err := d.observer.pods.Pods(n.Namespace).Get(n.Name)
		if err == nil && p.UID == uid && starting[n.Node] && IsPending(p) {
			out[uid] = n.Node
		}
	}
	return out
}

// nominatedNodes are the nodes tidal's standing nominations name, for the
// informers' handlers: a node of them going wakes the loop, so its pods
// get another node at once. Safe for concurrent use.
type nominatedNodes struct {
	mu    sync.Mutex
	nodes map[string]bool
	// pods maps the pods nominated to the node each is nominated to.
	pods map[types.UID]string
}

func (n *nominatedNodes) set(s nominate.State) {
	nodes := make(map[string]bool, len(s))
	pods := make(map[types.UID]string, len(s))
	for uid, nom := range s {
		nodes[nom.Node] = true
		pods[uid] = nom.Node
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes, n.pods = nodes, pods
}

// elsewhere reports whether tidal nominated the pod to a node other than
// node.
func (n *nominatedNodes) elsewhere(uid types.UID, node string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	to, ok := n.pods[uid]
	return ok && to != node
}

func (n *nominatedNodes) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[name]
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
