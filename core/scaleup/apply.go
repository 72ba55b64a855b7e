package scaleup

import (
	"context"
	"sort"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/expander"
)

// apply carries the chosen option into the snapshot: the group's new nodes
// and the pods they take stay there for the next rounds. With balancing,
// the nodes are split across groups alike but for zone, evening out sizes.
func (d *decision) apply(ctx context.Context, choice expander.Decision, work []estimator.Work, estimates map[string]*estimator.Estimate) ([]ScaleUp, error) {
	summary := summarize(estimates, d.in.Groups)
	shares := []share{{group: choice.Best.NodeGroup, nodes: choice.Best.NodeCount}}
	balanced := false
	if d.in.BalanceSimilar {
		if similar := d.similarGroups(choice.Best.NodeGroup); len(similar) > 1 {
			shares, balanced = d.balance(choice.Best.NodeCount, similar), true
		}
	}
	var ups []ScaleUp
	for i, s := range shares {
		if s.nodes == 0 {
			continue
		}
		if i > 0 || len(ups) > 0 {
			// Earlier shares placed pods: bring the checks up to date.
			var err error
			if work, err = d.checks(ctx, pendingOf(work, ups)); err != nil {
				return nil, err
			}
		}
		g := d.groupByID(s.group)
		est, err := estimator.Binpack(ctx, d.in.Checker, g.Template, work, estimator.Limits{MaxNodes: s.nodes}, true)
		if err != nil {
			return nil, err
		}
		if est.NodeCount == 0 {
			continue
		}
		from := g.Target + d.planned[g.ID]
		d.planned[g.ID] += est.NodeCount
		for _, name := range est.Nodes {
			d.plannedNodes[name] = len(d.plan.ScaleUps) + len(ups)
			d.plannedOrder = append(d.plannedOrder, name)
		}
		ups = append(ups, ScaleUp{Group: g.ID, From: from, To: from + est.NodeCount, Max: g.Max, Pods: est.Pods,
			Decision: choice, Balanced: balanced, Estimates: summary})
	}
	return ups, nil
}

type share struct {
	group string
	nodes int
}

// balance splits total new nodes over groups, one at a time to the group
// that is smallest (target plus planned), within each group's headroom.
func (d *decision) balance(total int, groups []string) []share {
	size := map[string]int{}
	room := map[string]int{}
	for _, id := range groups {
		g := d.groupByID(id)
		size[id] = g.Target + d.planned[id]
		room[id], _ = d.headroom(*g)
	}
	out := make([]share, len(groups))
	for i, id := range groups {
		out[i].group = id
	}
	for n := 0; n < total; n++ {
		best := -1
		for i, s := range out {
			if s.nodes >= room[s.group] {
				continue
			}
			if best < 0 || size[s.group] < size[out[best].group] {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out[best].nodes++
		size[out[best].group]++
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].nodes > out[j].nodes })
	return out
}

func summarize(estimates map[string]*estimator.Estimate, groups []Group) []EstimateSummary {
	var out []EstimateSummary
	for _, g := range groups {
		if e, ok := estimates[g.ID]; ok {
			out = append(out, EstimateSummary{Group: g.ID, NodeCount: e.NodeCount, Pods: len(e.Pods)})
		}
	}
	return out
}

// pendingOf turns work back into pending pods, minus those ups help.
func pendingOf(work []estimator.Work, ups []ScaleUp) []pending {
	p := make([]pending, len(work))
	for i, w := range work {
		p[i] = pending{group: w.Check.Group, pods: w.Pods}
	}
	return without(p, ups)
}
