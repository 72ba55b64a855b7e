package scaleup

import (
	"context"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// Reasons a node group gives a pod group it cannot help, besides the
// scheduler's own.
const (
	ReasonMaxSize       = "max node group size reached"
	ReasonMaxNodesTotal = "max total nodes in cluster reached"
	ReasonMaxCores      = "max cluster cpu limit reached"
	ReasonMaxMemory     = "max cluster memory limit reached"
	ReasonMaxPerScaleUp = "max nodes per scale-up reached"
	ReasonTimedOut      = "estimate cut short by --max-binpacking-time or --max-nodegroup-binpacking-duration"
)

// rounds makes scale-ups until no group helps the pods left: after each
// one, its nodes and pods stay in the snapshot, so the next round sees the
// cluster as it will be. Pods with hostname anti-affinity or zone spread
// get every node they need in one decision this way. The first round runs
// even out of time, so a decision always scales up for what it decided;
// pods left when time ran out are the next decision's.
func (d *decision) rounds(ctx context.Context, remaining []pending) error {
	reasons := newReasons()
	for round := 0; round < d.in.MaxRounds && len(remaining) > 0; round++ {
		if round > 0 && timedOut(ctx) {
			break
		}
		if round > 0 {
			var err error
			if remaining, err = d.placeOnKnown(ctx, remaining); err != nil {
				return err
			}
			if len(remaining) == 0 {
				break
			}
		}
		work, err := d.checks(ctx, remaining)
		if err != nil {
			return err
		}
		estimates, err := d.estimateAll(ctx, work, reasons)
		if err != nil {
			return err
		}
		options := optionsFrom(estimates, d.in.Groups)
		if len(options) == 0 {
			break
		}
		d.plan.hadOptions = true
		decision := d.in.Chain.Choose(options, d.expander)
		ups, err := d.apply(ctx, decision, work, estimates)
		if err != nil {
			return err
		}
		if len(ups) == 0 {
			break
		}
		for i := range ups {
			ups[i].Rejected = reasons.rejected(work, ups[i].Pods)
			// The group grown helped these pods, if not all of their kind.
			delete(ups[i].Rejected, ups[i].Group)
		}
		d.plan.ScaleUps = append(d.plan.ScaleUps, ups...)
		// The scale-up added nodes: the next round checks afresh.
		remaining = without(remaining, ups)
	}
	outOfTime := timedOut(ctx)
	for _, r := range remaining {
		if outOfTime {
			d.skip(r.group, r.pods)
			continue
		}
		d.plan.NoScaleUp = append(d.plan.NoScaleUp, NoScaleUp{Group: r.group, Pods: r.pods, Reasons: reasons.of(r.group),
			ByNodeGroup: reasons.byNodeGroup(r.group)})
	}
	return nil
}

// checks brings the groups' checks up to date with the snapshot as the
// filter and the earlier rounds left it: the filter's own checks caught up
// with the pods placed after them (the snapshot has no other change yet),
// or, once rounds have added nodes, a new PreFilter.
func (d *decision) checks(ctx context.Context, remaining []pending) ([]estimator.Work, error) {
	c := d.in.Checker
	work := make([]estimator.Work, 0, len(remaining))
	for _, r := range remaining {
		var gc *simulator.GroupCheck
		var err error
		if r.check != nil {
			gc, err = c.CatchUp(ctx, r.check, d.placed[r.since:])
		} else {
			gc, err = d.checkGroup(ctx, r.group)
		}
		if err != nil {
			return nil, err
		}
		work = append(work, estimator.Work{Check: gc, Pods: r.pods})
	}
	return work, nil
}

// estimateAll asks every group that may grow how many nodes it would add,
// recording why the others cannot help.
func (d *decision) estimateAll(ctx context.Context, work []estimator.Work, reasons *reasons) (map[string]*estimator.Estimate, error) {
	out := map[string]*estimator.Estimate{}
	for _, g := range d.in.Groups {
		if g.Unavailable != "" {
			reasons.all(work, g.ID, g.Unavailable)
			continue
		}
		maxNodes, why := d.headroom(g)
		if maxNodes <= 0 {
			reasons.all(work, g.ID, why)
			continue
		}
		est, err := d.estimate(ctx, g, work, maxNodes)
		if err != nil {
			return nil, err
		}
		reasons.fromEstimate(work, g.ID, est, why)
		if est.NodeCount > 0 {
			out[g.ID] = est
		}
	}
	return out, nil
}

// estimate is group g's estimate for work, within the decision's deadline
// and the group's own budget, whichever comes first.
func (d *decision) estimate(ctx context.Context, g Group, work []estimator.Work, maxNodes int) (*estimator.Estimate, error) {
	if d.in.MaxGroupBinpacking > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.in.MaxGroupBinpacking)
		defer cancel()
	}
	return estimator.Binpack(ctx, d.in.Checker, g.Template, work, estimator.Limits{MaxNodes: maxNodes}, false)
}

func optionsFrom(estimates map[string]*estimator.Estimate, groups []Group) []expander.Option {
	var options []expander.Option
	for _, g := range groups {
		est, ok := estimates[g.ID]
		if !ok {
			continue
		}
		options = append(options, expander.Option{
			NodeGroup: g.ID, NodeCount: est.NodeCount, Pods: est.Pods, Template: g.Template.Node,
		})
	}
	return options
}

// without drops the pods the scale-ups help.
func without(remaining []pending, ups []ScaleUp) []pending {
	helped := map[string]bool{}
	for _, u := range ups {
		for _, p := range u.Pods {
			helped[podKey(p)] = true
		}
	}
	var out []pending
	for _, r := range remaining {
		left := pending{group: r.group}
		for _, p := range r.pods {
			if !helped[podKey(p)] {
				left.pods = append(left.pods, p)
			}
		}
		if len(left.pods) > 0 {
			out = append(out, left)
		}
	}
	return out
}

// groupByID finds a group of the input.
func (d *decision) groupByID(id string) *Group {
	for i := range d.in.Groups {
		if d.in.Groups[i].ID == id {
			return &d.in.Groups[i]
		}
	}
	return nil
}
