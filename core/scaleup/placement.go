package scaleup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Placement says whose placement a scale-up's node count follows
// (--scale-up-placement).
type Placement string

const (
	// PlacementPlan asks for the nodes the plan packed the pods on: what
	// the scheduler needs when it follows the plan (nominations).
	PlacementPlan Placement = "plan"
	// PlacementScheduler asks for the nodes on which the scheduler's
	// default scoring, placing the pods itself, finds room for every one.
	PlacementScheduler Placement = "scheduler"
)

// Placements are the values --scale-up-placement takes.
var Placements = []Placement{PlacementPlan, PlacementScheduler}

// ParsePlacement reads a --scale-up-placement value.
func ParsePlacement(s string) (Placement, error) {
	for _, p := range Placements {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("--scale-up-placement=%q: want %q or %q", s, PlacementPlan, PlacementScheduler)
}

// maxSchedulerSteps bounds how many nodes the scheduler-like placement adds
// to the plan's, one at a time. maxReportedPairs bounds the pods it places
// times the nodes it scores them on (the cluster's and the planned ones)
// when the count is only reported (PlacementPlan): every decision pays for
// it.
const (
	maxSchedulerSteps = 32
	maxReportedPairs  = 5_000
)

// schedulerPlacement measures how many nodes the scheduler would need for
// the pods the plan's scale-ups help, placing them itself: in the pending
// order, each on the node its default scoring ranks first among those that
// fit (simulator.Checker.Schedule), all the plan's nodes there at once. A
// pod left out adds a node to the group whose scale-up helped it, and the
// pods are placed again from the start, until every one has a node.
// Plan.SchedulerNodes is that count (zero: not measured: above the
// whole-plan bounds, out of time, or a group with no headroom left). With
// PlacementScheduler the scale-ups then ask for it. The snapshot must be as
// the filter left it.
func (d *decision) schedulerPlacement(ctx context.Context, remaining []pending) error {
	planned, group := d.plannedPerGroup()
	nodes := sum(planned)
	pods := onlyHelped(remaining, group)
	if nodes == 0 || nodes > maxWholePlanNodes || len(group) > maxWholePlanPods ||
		(d.in.Placement != PlacementScheduler && (d.in.Checker.Snapshot().Len()+nodes)*len(group) > maxReportedPairs) {
		return nil
	}
	extra := map[string]int{}
	for step := 0; step <= maxSchedulerSteps && !timedOut(ctx); step++ {
		left, err := d.settle(ctx, pods, planned, extra)
		if err != nil {
			return err
		}
		if left == nil {
			d.plan.PlanNodes, d.plan.SchedulerNodes = nodes, nodes+sum(extra)
			break
		}
		g := group[podKey(left)]
		if n, _ := d.headroomWith(*d.groupByID(g), plus(planned, extra)); n <= 0 {
			return nil
		}
		extra[g]++
	}
	if d.in.Placement == PlacementScheduler && d.plan.SchedulerNodes > 0 {
		d.raise(extra)
	}
	return nil
}

// plannedPerGroup counts the scale-ups' nodes per group, and maps each pod
// they help to its scale-up's group.
func (d *decision) plannedPerGroup() (map[string]int, map[string]string) {
	nodes, group := map[string]int{}, map[string]string{}
	for _, u := range d.plan.ScaleUps {
		nodes[u.Group] += u.To - u.From
		for _, p := range u.Pods {
			group[podKey(p)] = u.Group
		}
	}
	return nodes, group
}

// onlyHelped keeps, in order, the pods a scale-up helps.
func onlyHelped(remaining []pending, group map[string]string) []pending {
	var out []pending
	for _, r := range remaining {
		kept := pending{group: r.group}
		for _, p := range r.pods {
			if group[podKey(p)] != "" {
				kept.pods = append(kept.pods, p)
			}
		}
		if len(kept.pods) > 0 {
			out = append(out, kept)
		}
	}
	return out
}

// settle adds the planned and extra nodes to a fork of the snapshot and
// places the pods there as the scheduler would; it returns the first pod
// left out, or nil.
func (d *decision) settle(ctx context.Context, pods []pending, planned, extra map[string]int) (*corev1.Pod, error) {
	c := d.in.Checker
	snap := c.Snapshot()
	snap.Fork()
	defer snap.Revert()
	for _, g := range d.in.Groups {
		for i := 0; i < planned[g.ID]+extra[g.ID]; i++ {
			if _, err := g.Template.AddCopy(snap, fmt.Sprintf("scheduled-%s-%d", g.ID, i)); err != nil {
				return nil, fmt.Errorf("node group %s: planned node: %w", g.ID, err)
			}
		}
	}
	nodes := d.readyNodes()
	for _, r := range pods {
		gc, err := d.checkGroup(ctx, r.group)
		if err != nil {
			return nil, err
		}
		for _, p := range r.pods {
			i, err := c.Schedule(ctx, gc, nodes)
			if err != nil {
				return nil, err
			}
			if i < 0 {
				return p, nil
			}
			if _, err := c.Place(ctx, gc.PodCheck, p, nodes[i].Node().Name); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

// raise makes the scale-ups ask for the extra nodes: each group's first
// scale-up, and the later ones of that group after it.
func (d *decision) raise(extra map[string]int) {
	added := map[string]int{}
	for i := range d.plan.ScaleUps {
		u := &d.plan.ScaleUps[i]
		u.From += added[u.Group]
		if added[u.Group] == 0 && extra[u.Group] > 0 {
			added[u.Group] = extra[u.Group]
		}
		u.To += added[u.Group]
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func plus(a, b map[string]int) map[string]int {
	out := make(map[string]int, len(a)+len(b))
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
