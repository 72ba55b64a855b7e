package core

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/interrupt"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// interruptions are the cloud's word of instances going away on their
// own (cloudprovider.InterruptionSource, nil without one) and those
// received but not acted on yet, by message id.
type interruptions struct {
	source  cloudprovider.InterruptionSource
	pending map[string]cloudprovider.Interruption
	// ready are the nodes taken away whose pods the last iterations found
	// room for on Ready nodes (the time to it is observed once).
	ready map[string]bool
}

func newInterruptions(cloud cloudprovider.CloudProvider) *interruptions {
	in := &interruptions{pending: map[string]cloudprovider.Interruption{}, ready: map[string]bool{}}
	if n, ok := cloud.(cloudprovider.InterruptionNotifier); ok {
		in.source = n.Interruptions()
	}
	return in
}

// run receives until ctx ends, waking the loop through notify.
func (in *interruptions) run(ctx context.Context, notify func()) {
	if in.source != nil {
		in.source.Run(ctx, notify)
	}
}

// interrupt takes the interruptions received, marks the nodes they
// concern at once and has their removal started (interrupt.Decide, the
// actuator's Replace), deletes the messages acted on, and returns the
// nodes being taken away with their marks: this iteration decides without
// them, and with their pods pictured as pending, so capacity for those
// pods is asked for now, not once they are evicted.
func (d *Decider) interrupt(ctx context.Context, o *observation) map[string]interrupt.Mark {
	logger := klog.FromContext(ctx)
	in := d.interrupts
	if in.source != nil {
		got := in.source.Take()
		for _, it := range got.Interruptions {
			if _, seen := in.pending[it.ID]; !seen {
				d.metrics.InterruptionMessages(it.Kind, 1)
			}
			in.pending[it.ID] = it
		}
		for reason, n := range got.Dropped {
			d.metrics.InterruptionMessages(reason, n)
		}
	}
	removing := map[string]bool{}
	for _, n := range d.actuator.Removing().Nodes {
		removing[n] = true
	}
	nodes := make([]interrupt.Node, 0, len(o.nodes))
	byName := map[string]*corev1.Node{}
	for _, n := range o.nodes {
		byName[n.Name] = n
		node := interrupt.Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Group: o.groupOfNode[n.Name], Removing: removing[n.Name]}
		if m, found, err := interrupt.MarkOf(n); found {
			if err != nil {
				logger.Error(err, "Node marked as taken away with an annotation tidal cannot read; replacing it anyway", "node", n.Name)
			}
			node.Mark = &m
		}
		nodes = append(nodes, node)
	}
	dec := interrupt.Decide(interrupt.Input{Interruptions: slices.Collect(maps.Values(in.pending)), Nodes: nodes, Now: o.now})
	for id, instances := range dec.Foreign {
		logger.Info("Interruption of instances that are no node of a node group; nothing to do", "messageID", id, "instances", instances)
	}
	reps := make([]act.Replacement, 0, len(dec.Act))
	for _, a := range dec.Act {
		g := o.group(a.Group)
		if g == nil {
			continue
		}
		evict, daemonSet := d.podsOf(a.Node)
		reps = append(reps, act.Replacement{Removal: act.Removal{Name: a.Node, Node: byName[a.Node], Group: g.group, Pods: evict,
			DaemonSet: daemonSet, Kind: a.Mark.Kind}, Mark: a.Mark, Write: a.New})
	}
	failed := map[string]error{}
	if len(reps) > 0 {
		failed = d.actuator.Replace(ctx, d.lifetime, reps)
	}
	for _, id := range interrupt.Acted(dec, failed) {
		if err := in.source.Done(ctx, id); err != nil {
			logger.Error(err, "Could not delete an interruption message acted on; it comes back and is acted on again (a no-op)", "messageID", id)
		}
		delete(in.pending, id)
	}
	gone := map[string]interrupt.Mark{}
	for _, n := range nodes {
		if n.Group != "" && n.Mark != nil {
			gone[n.Name] = *n.Mark
		}
	}
	for _, r := range reps {
		if failed[r.Name] == nil {
			gone[r.Name] = r.Mark
		}
	}
	d.reclaim(ctx, o, gone)
	return gone
}

// reclaim backs off the node groups the cloud reclaims spot instances of
// (interrupt.Reclaimed), as after a launch that failed for want of
// capacity, unless they are backed off already: scale-up then grows other
// groups for the pods of the nodes taken away, and the reclaimed group
// only for pods no other group can run (interrupt.LastResort).
func (d *Decider) reclaim(ctx context.Context, o *observation, gone map[string]interrupt.Mark) {
	marked := make([]interrupt.Action, 0, len(gone))
	for n, m := range gone {
		marked = append(marked, interrupt.Action{Node: n, Group: o.groupOfNode[n], Mark: m})
	}
	for _, r := range interrupt.Reclaimed(marked) {
		if d.state.Group(r.Group).BackoffUntil.After(o.now) {
			continue
		}
		d.state.BackOff(r.Group, o.now, &r.Info)
		klog.FromContext(ctx).Info("Node group backed off: the cloud reclaims a spot instance of it; its nodes' pods go to other groups first",
			"nodeGroup", r.Group, "reason", r.Info.ErrorMessage, "until", d.state.Group(r.Group).BackoffUntil)
	}
}

// avoided are the node groups backed off only because the cloud reclaims
// a spot instance of them.
func (d *Decider) avoided(groups []scaleup.Group) map[string]bool {
	out := map[string]bool{}
	for _, g := range groups {
		v := d.state.Group(g.ID)
		if g.Unavailable != "" && v.BackedOff && v.LastFailure != nil && v.LastFailure.ErrorCode == interrupt.SpotReclaimed {
			out[g.ID] = true
		}
	}
	return out
}

// waitingFor are the nodes left out of this iteration some of whose
// pictured pods (expendable ones aside) the scale-up plan did not place
// on Ready nodes: their capacity is still to come.
func waitingFor(o *observation, plan *scaleup.Plan, cutoff int32) map[string]bool {
	onReady := map[types.UID]bool{}
	if plan != nil {
		for _, p := range plan.OnExisting {
			onReady[p.Info.GetPod().UID] = true
		}
	}
	waiting := map[string]bool{}
	for _, p := range o.pending {
		if node := p.Annotations[scaleup.ReplacementOfAnnotation]; node != "" && !onReady[p.UID] && scaleup.PodPriority(p) >= cutoff {
			waiting[node] = true
		}
	}
	return waiting
}

// replacementReady observes, once per node the cloud takes away, the time
// from the cloud's event to the capacity for its pods Ready: the first
// iteration whose plan places every pictured pod of the node on Ready
// nodes and waits for no new node for any pending pod (those evicted from
// it included; pods of other workloads waiting too make it later, never
// sooner).
func (d *Decider) replacementReady(o *observation, plan *scaleup.Plan, gone map[string]interrupt.Mark) {
	in := d.interrupts
	for n := range in.ready {
		if _, ok := gone[n]; !ok {
			delete(in.ready, n)
		}
	}
	if plan != nil && (len(plan.Awaiting) > 0 || len(plan.ScaleUps) > 0) {
		return
	}
	waiting := waitingFor(o, plan, d.opts.ExpendablePodsPriorityCutoff)
	for n, m := range gone {
		if in.ready[n] || waiting[n] || m.Sent.IsZero() {
			continue
		}
		in.ready[n] = true
		d.metrics.ReplacementReady(m.Kind, o.now.Sub(m.Sent))
	}
}

// podsOf are the pods of a node as the snapshot has them: those to
// evict, and its DaemonSet pods.
func (d *Decider) podsOf(node string) (evict, daemonSet []*corev1.Pod) {
	ni := d.checker.Snapshot().NodeInfo(node)
	if ni == nil {
		return nil, nil
	}
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		switch {
		case scaledown.IsDaemonSetPod(p):
			daemonSet = append(daemonSet, p)
		case scaledown.IsMirror(p), scaledown.IsTerminal(p):
		default:
			evict = append(evict, p)
		}
	}
	return evict, daemonSet
}

// withoutGone takes the nodes being taken away out of the snapshot, with
// their pods, for this iteration's decisions (the caller reverts the
// fork), and returns copies of the pods that come back elsewhere, pending
// and pictured, so scale-up asks for their capacity now.
func (d *Decider) withoutGone(ctx context.Context, gone []string) []*corev1.Pod {
	snap := d.checker.Snapshot()
	var pictured []*corev1.Pod
	for _, name := range gone {
		ni := snap.NodeInfo(name)
		if ni == nil {
			continue
		}
		var pods []*corev1.Pod
		for _, pi := range ni.GetPods() {
			pods = append(pods, pi.GetPod())
		}
		for _, p := range interrupt.Replaced(pods) {
			pictured = append(pictured, replacementPod(p, name))
		}
		if err := snap.RemoveNode(name); err != nil {
			klog.FromContext(ctx).Error(err, "Could not leave a node the cloud takes away out of this iteration's decisions", "node", name)
		}
	}
	// Results computed on the snapshot before are not reused with these
	// nodes out.
	snap.Touch()
	return pictured
}

// replacementPod is a pending copy of p, pictured: same spec and labels,
// unbound, annotated with the node it replaces a pod of.
func replacementPod(p *corev1.Pod, node string) *corev1.Pod {
	c := &corev1.Pod{ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: *p.Spec.DeepCopy()}
	c.UID = types.UID("tidal-replacement/" + string(p.UID))
	c.Spec.NodeName = ""
	c.OwnerReferences = p.OwnerReferences
	c.ManagedFields = nil
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[scaleup.ReplacementOfAnnotation] = node
	c.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return c
}
