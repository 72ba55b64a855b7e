package scaleup

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// resume places g's pods after the first len(reused), which reused
// places: the search starts at node from (see standing). check, when
// set, is g's check before them.
func (d *decision) resume(ctx context.Context, g *simulator.PodGroup, nodes *simulator.NodeIndex, reused []simulator.Placed, check *simulator.GroupCheck, from string) ([]simulator.Placed, []*corev1.Pod, *simulator.GroupCheck, error) {
	c, r := d.in.Checker, d.reuse
	r.resumed++
	r.unbound = append(r.unbound, reused...)
	if err := r.bind(nodes, c.Snapshot()); err != nil {
		return nil, nil, nil, err
	}
	var err error
	if check != nil {
		check, err = c.CatchUp(ctx, check, reused)
	} else {
		check, err = d.checkGroup(ctx, g)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	rest, unplaced, err := c.PlaceGroupIndexedFrom(ctx, check, g.Pods[len(reused):], nodes, from)
	if err != nil {
		return nil, nil, nil, err
	}
	placed := append(reused, rest...)
	r.record(g, check.Status == nil, placed)
	return placed, unplaced, check, nil
}

// placeGroup places g's pods on the ready nodes, reusing the last
// filter's placements when they hold; check is nil then, unless one was
// made to look at the nodes that changed.
func (d *decision) placeGroup(ctx context.Context, g *simulator.PodGroup, nodes *simulator.NodeIndex) (placed []simulator.Placed, unplaced []*corev1.Pod, check *simulator.GroupCheck, err error) {
	c, r := d.in.Checker, d.reuse
	run := r.match(g)
	// same is set when g's placements are run's: diff stays as it is.
	same := false
	defer func() { r.done(run, same) }()
	if run != nil && r.isLocal(c.Snapshot(), g.Representative()) {
		k, whole, from, err := r.standing(run, g, func(name string) (bool, error) {
			if check == nil {
				if err := r.bind(nodes, c.Snapshot()); err != nil {
					return false, err
				}
				if check, err = d.checkGroup(ctx, g); err != nil {
					return false, err
				}
			}
			ni := c.Snapshot().NodeInfo(name)
			return !(check.ResourcesFit(ni) && c.Filter(ctx, check.PodCheck, ni).IsSuccess()), nil
		})
		if err != nil {
			return nil, nil, nil, err
		}
		if whole {
			placed = again(run, g, k)
			r.reused++
			r.unbound = append(r.unbound, placed...)
			r.addRun(g, true, placed)
			same = true
			if check != nil && k < len(g.Pods) {
				// The check made to find the nodes that changed serves
				// the pods left once it takes in g's placements.
				if err := r.bind(nodes, c.Snapshot()); err != nil {
					return nil, nil, nil, err
				}
				if check, err = c.CatchUp(ctx, check, placed); err != nil {
					return nil, nil, nil, err
				}
				r.keptChecks++
			}
			return placed, g.Pods[k:], check, nil
		}
		if from != "" {
			return d.resume(ctx, g, nodes, again(run, g, k), check, from)
		}
	}
	if err := r.bind(nodes, c.Snapshot()); err != nil {
		return nil, nil, nil, err
	}
	free := r.isLocal(c.Snapshot(), g.Representative())
	if check == nil {
		// (A check made to find the nodes that changed is this one.)
		if check, err = d.checkGroup(ctx, g); err != nil {
			return nil, nil, nil, err
		}
	}
	if placed, unplaced, err = c.PlaceGroupIndexed(ctx, check, g.Pods, nodes); err != nil {
		return nil, nil, nil, err
	}
	r.record(g, free && check.Status == nil, placed)
	return placed, unplaced, check, nil
}

// bind binds the reused placements in the snapshot and tells the index,
// once for the placements on one node in a row (it measures the node as
// it is).
func (r *filterReuse) bind(nodes *simulator.NodeIndex, snap *simulator.Snapshot) error {
	for i, p := range r.unbound {
		if err := snap.AddPod(p.Info, p.Node); err != nil {
			return err
		}
		if i+1 == len(r.unbound) || r.unbound[i+1].Node != p.Node {
			nodes.Update(p.Node)
		}
	}
	r.unbound = r.unbound[:0]
	return nil
}
