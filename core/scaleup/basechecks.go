package scaleup

import (
	"context"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// checkGroup is the Checker's CheckGroup, started from the group's base
// check (simulator.BaseCheck) found by this decision or handed over by
// the last: a group with pod affinity or anti-affinity then takes in only
// the pods changed since, not every pod of the cluster. Before the filter
// starts there is none.
func (d *decision) checkGroup(ctx context.Context, g *simulator.PodGroup) (*simulator.GroupCheck, error) {
	if d.reuse == nil {
		return d.in.Checker.CheckGroup(ctx, g)
	}
	return d.reuse.checkGroup(ctx, d.in.Checker, g)
}

func (r *filterReuse) checkGroup(ctx context.Context, c *simulator.Checker, g *simulator.PodGroup) (*simulator.GroupCheck, error) {
	gc, next, err := c.CheckGroupFrom(ctx, g, r.next.checks[g.Key])
	if err != nil {
		return nil, err
	}
	if next != nil {
		r.next.checks[g.Key] = next
		if next.Carried() {
			r.carried++
		}
	}
	return gc, nil
}

// keepChecks takes on the last decision's base checks of the groups
// still pending (checkGroup brings them up to date, and the next decision
// has those this one did not need).
func (r *filterReuse) keepChecks(pending []*simulator.PodGroup) {
	for _, g := range pending {
		if base, ok := r.prev.checks[g.Key]; ok {
			r.next.checks[g.Key] = base
		}
	}
}
