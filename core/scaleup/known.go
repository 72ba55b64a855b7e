package scaleup

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// placeOnKnown places, before a round asks for new nodes, the pods that now
// fit on nodes the cluster has or this decision already plans: earlier
// rounds left free room on their new nodes, and their pods may have changed
// what a constraint allows (a zone spread's skew, a pod affinity's match).
// A pod placed on a planned node joins that node's scale-up; on an upcoming
// node it awaits that node's group; elsewhere it fits what exists. It
// returns the pods still to help, each with its check and the placements
// it must catch up with.
func (d *decision) placeOnKnown(ctx context.Context, remaining []pending) ([]pending, error) {
	planned := d.plannedInfos()
	all := d.readyNodes()
	var out []pending
	for _, r := range remaining {
		gc, err := d.checkGroup(ctx, r.group)
		if err != nil {
			return nil, err
		}
		// Without pod affinity or spread, new pods elsewhere never make an
		// existing node fit: only the planned nodes' free room is new.
		nodes := planned
		if gc.Stateful() {
			nodes = all
		}
		placed, unplaced, err := d.in.Checker.PlaceGroup(ctx, gc, r.pods, nodes)
		if err != nil {
			return nil, err
		}
		d.credit(placed)
		d.placed = append(d.placed, placed...)
		if len(unplaced) > 0 {
			out = append(out, pending{group: r.group, pods: unplaced, check: gc, since: len(d.placed)})
		}
	}
	return out, nil
}

// plannedInfos are the snapshot's nodes that this decision's scale-ups add.
func (d *decision) plannedInfos() []fwk.NodeInfo {
	snap := d.in.Checker.Snapshot()
	out := make([]fwk.NodeInfo, 0, len(d.plannedOrder))
	for _, name := range d.plannedOrder {
		if ni := snap.NodeInfo(name); ni != nil {
			out = append(out, ni)
		}
	}
	return out
}

// credit gives pods placed on known nodes to what will run them.
func (d *decision) credit(placed []simulator.Placed) {
	for _, pl := range placed {
		pod := pl.Info.GetPod()
		d.credited = append(d.credited, pod)
		if i, ok := d.plannedNodes[pl.Node]; ok {
			d.plan.ScaleUps[i].Pods = append(d.plan.ScaleUps[i].Pods, pod)
			continue
		}
		if group, ok := d.upcoming[pl.Node]; ok {
			d.plan.Awaiting[pod.UID] = group
		}
		d.plan.FitExisting++
	}
}
