package scaleup

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// placeCleared places the pods of Input.Cleared on the node their cleared
// nomination named where they still fit: the node itself when it is ready,
// the copy standing for it while it starts. It returns the pod groups
// without the pods so placed (a group left empty is dropped).
func (d *decision) placeCleared(ctx context.Context, ready []fwk.NodeInfo) ([]*simulator.PodGroup, error) {
	if len(d.in.Cleared) == 0 {
		return d.in.Pending, nil
	}
	targets := d.clearedTargets(ready)
	out := make([]*simulator.PodGroup, 0, len(d.in.Pending))
	for _, g := range d.in.Pending {
		rest, err := d.placeClearedOf(ctx, g, targets)
		if err != nil {
			return nil, err
		}
		switch {
		case len(rest) == len(g.Pods):
			out = append(out, g)
		case len(rest) > 0:
			kept := *g
			kept.Pods = rest
			out = append(out, &kept)
		}
	}
	return out, nil
}

// clearedTargets maps the names of the nodes a cleared nomination may be
// set to again to where the decision places pods for them: the ready nodes
// themselves, and the copies of the registered nodes still starting.
func (d *decision) clearedTargets(ready []fwk.NodeInfo) map[string]fwk.NodeInfo {
	out := make(map[string]fwk.NodeInfo, len(ready)+len(d.starting))
	for _, ni := range ready {
		out[ni.Node().Name] = ni
	}
	snap := d.in.Checker.Snapshot()
	for copyName, node := range d.starting {
		if ni := snap.NodeInfo(copyName); ni != nil {
			out[node] = ni
		}
	}
	return out
}

// placeClearedOf places g's cleared pods on their targets and returns the
// pods left, in order.
func (d *decision) placeClearedOf(ctx context.Context, g *simulator.PodGroup, targets map[string]fwk.NodeInfo) ([]*corev1.Pod, error) {
	c := d.in.Checker
	var rest []*corev1.Pod
	var gc *simulator.GroupCheck
	since := 0
	for _, p := range g.Pods {
		ni := targets[d.in.Cleared[p.UID]]
		if ni == nil {
			rest = append(rest, p)
			continue
		}
		var err error
		if gc == nil {
			gc, err = d.checkGroup(ctx, g)
		} else {
			gc, err = c.CatchUp(ctx, gc, d.placed[since:])
		}
		if err != nil {
			return nil, err
		}
		since = len(d.placed)
		placed, _, err := c.PlaceGroup(ctx, gc, []*corev1.Pod{p}, []fwk.NodeInfo{ni})
		if err != nil {
			return nil, err
		}
		if len(placed) == 0 {
			rest = append(rest, p)
		}
		d.filtered(placed)
	}
	return rest, nil
}
