package core

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/consolidate"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// consolidationReport is what the consolidation step saw and did.
type consolidationReport struct {
	// plan is the last proposal (nil: none made this iteration), waiting
	// why none was made.
	plan    *consolidate.Plan
	waiting string
	// started is the replacement whose new nodes were requested;
	// progress the step of the one in flight.
	started  *consolidate.Replacement
	progress *consolidate.Progress
	// settling is what a draining replacement still waits for.
	settling string
	// inFlight is the replacement under way when the step ended (a copy),
	// budgetWindows the disruption budget windows open.
	inFlight      *consolidate.InFlight
	budgetWindows []string
}

// endStep copies into cr what the status shows of the state when the
// step ends.
func (d *Decider) endStep(cr *consolidationReport) {
	if f := d.mem.consolidation.InFlight; f != nil {
		c := *f
		cr.inFlight = &c
	}
	cr.budgetWindows = d.sched.activeBudgets().Names
}

// consolidate advances the replacement in flight, or proposes
// replacements (consolidate.Decide) and starts the best one: its new nodes
// are requested now, its old nodes drained once those are Ready
// (advance). One replacement is in flight at a time.
func (d *Decider) consolidate(ctx context.Context, o *observation, report *Iteration, plan *scaledown.Plan, started []string) error {
	if !d.opts.Consolidation.Replace {
		return nil
	}
	cr := &consolidationReport{}
	report.consolidation = cr
	defer d.endStep(cr)
	d.finish(ctx, o)
	if d.mem.consolidation.InFlight != nil {
		return d.advance(ctx, o, cr)
	}
	removing := d.actuator.Removing()
	if cr.waiting = d.consolidationWaits(o, report, removing, started); cr.waiting != "" {
		return nil
	}
	in := d.consolidationInput(o, removing)
	in.Candidates = d.replaceable(o, plan)
	for _, u := range plan.Unneeded {
		in.Leaving = append(in.Leaving, consolidate.Leaving{Node: u.Node, Pods: u.Pods.ToMove})
	}
	p, err := consolidate.Decide(ctx, in)
	if err != nil {
		return err
	}
	cr.plan, cr.waiting = p, p.Waiting
	saving := 0.0
	for _, r := range p.Replacements {
		saving += r.Saving
	}
	d.metrics.ConsolidationProposed(saving)
	if len(p.Replacements) == 0 {
		return nil
	}
	return d.startReplacement(ctx, o, report, p.Replacements[0])
}

// consolidationWaits says why no replacement starts now, or "": removals
// under way or starting, a scale-up in this iteration, pending pods, the
// backoff after a failed replacement, scale-down's cooldowns.
func (d *Decider) consolidationWaits(o *observation, report *Iteration, removing act.Removing, started []string) string {
	switch {
	case len(started) > 0 || removing.All > 0:
		return "removals are under way"
	case report.scaledUp:
		return "a scale-up was requested in this iteration"
	case o.unschedulable+o.unprocessed > 0:
		return "pods are pending"
	case o.now.Before(d.mem.consolidation.BackoffUntil):
		return "backing off after a failed replacement until " + d.mem.consolidation.BackoffUntil.Format(time.RFC3339)
	case report.scaleDown != nil && report.scaleDown.cooldown != "":
		return report.scaleDown.cooldown
	}
	return ""
}

// startReplacement requests r's new nodes through the actuator and, when
// the cloud accepted them, keeps r in flight.
func (d *Decider) startReplacement(ctx context.Context, o *observation, report *Iteration, r consolidate.Replacement) error {
	g := o.group(r.Group)
	if g == nil {
		return nil
	}
	nodes := nodesByName(o.nodes)
	rep := act.Consolidation{Group: g.group, From: g.target, Count: r.Count, Kind: r.Kind, OldNames: r.Nodes(),
		OldCost: r.OldCost, NewCost: r.NewCost, Saving: r.Saving}
	for _, name := range rep.OldNames {
		rep.Old = append(rep.Old, nodes[name])
	}
	res := d.actuator.Consolidate(ctx, rep)
	if refused := d.apply(o, report, res); refused != "" {
		d.mem.consolidation = d.mem.consolidation.Failed(o.now, d.opts.Consolidation.Backoff, d.opts.Consolidation.MaxBackoff)
		return nil
	}
	if res.Grown == 0 {
		// Shadow mode: recorded, nothing requested.
		return nil
	}
	report.consolidation.started = &r
	d.mem.consolidation.InFlight = &consolidate.InFlight{Replacement: r, Requested: o.now, Before: groupNodes(o, r.Group)}
	return nil
}

// advance moves the replacement in flight on: it waits for the new nodes,
// gives up when they do not come within the group's provision time or an
// old node went, and once they are Ready checks again that the old nodes'
// pods fit (a pod that would not land stops the replacement) before
// handing the old nodes to their drains.
func (d *Decider) advance(ctx context.Context, o *observation, cr *consolidationReport) error {
	st := d.mem.consolidation
	f := st.InFlight
	if !f.Draining.IsZero() {
		d.settle(ctx, o, cr)
		return nil
	}
	var states []consolidate.NodeState
	for _, n := range groupNodes(o, f.Group) {
		states = append(states, consolidate.NodeState{Name: n, Ready: o.ready(n)})
	}
	present := func(name string) bool { return d.checker.Snapshot().NodeInfo(name) != nil }
	timeout := d.opts.groupOptions(o, f.Group).MaxNodeProvisionTime
	pr := consolidate.Advance(*f, states, present, o.now, timeout)
	cr.progress = &pr
	logger := klog.FromContext(ctx).WithValues("old", f.Nodes(), "nodeGroup", f.Group)
	fail := func(result, why string) {
		logger.Info("Replacement given up; nothing drained", "result", result, "reason", why)
		d.metrics.Replacement(f.Kind, result, f.Saving)
		d.events.OnStatus(d.status, corev1.EventTypeWarning, "ConsolidationFailed", "replacement of %v by %d node(s) of %s given up, nothing drained: %s",
			f.Nodes(), f.Count, f.Group, why)
		d.mem.consolidation = st.Failed(o.now, d.opts.Consolidation.Backoff, d.opts.Consolidation.MaxBackoff)
	}
	switch pr.Step {
	case consolidate.StepWait:
		return nil
	case consolidate.StepTimedOut:
		fail("timed_out", pr.Why)
		return nil
	case consolidate.StepAbandon:
		fail("abandoned", pr.Why)
		return nil
	}
	removing := d.actuator.Removing()
	r, why, err := consolidate.Recheck(ctx, consolidate.RecheckInput{Input: d.consolidationInput(o, removing), Replacement: f.Replacement})
	if err != nil {
		// Nothing is drained on an error; the next iteration tries again.
		return err
	}
	if why != "" {
		fail("stopped", why)
		return nil
	}
	nodes := nodesByName(o.nodes)
	var removals []act.Removal
	for _, old := range r.Old {
		removals = append(removals, act.Removal{Name: old.Node, Node: nodes[old.Node], Group: o.group(old.Group).group,
			Pods: old.Pods.ToMove, DaemonSet: old.Pods.DaemonSet, Kind: scaledown.KindReplaced})
	}
	logger.Info("Replacement's new nodes are Ready; draining the old ones", "new", pr.New, "savingPerHour", f.Saving)
	d.actuator.Remove(d.lifetime, removals)
	d.metrics.Replacement(f.Kind, "drained", f.Saving)
	d.mem.consolidation = st.Drain(o.now, pr.New)
	return nil
}

// settle lets a draining replacement go once it settled
// (consolidate.Settle): until then its new and old nodes stay out of
// scale-down's and consolidation's reach.
func (d *Decider) settle(ctx context.Context, o *observation, cr *consolidationReport) {
	f := d.mem.consolidation.InFlight
	sd := d.opts.ScaleDown
	timeout := sd.MaxPodEvictionTime + time.Duration(sd.MaxGracefulTerminationSec)*time.Second +
		d.opts.groupOptions(o, f.Group).MaxNodeProvisionTime
	settled, why := consolidate.Settle(*f, consolidate.Settling{Removing: d.actuator.Removing().Nodes, Pending: o.pending,
		Now: o.now, Timeout: timeout})
	cr.settling = why
	if !settled {
		return
	}
	klog.FromContext(ctx).Info("Replacement settled; its nodes are no longer held", "old", f.Nodes(), "new", f.New, "nodeGroup", f.Group,
		"note", why)
	d.mem.consolidation = d.mem.consolidation.Done(o.now)
}

// oldNodesGoneWithin bounds the wait for a settled replacement's old Node
// objects to go: the cloud node controller deletes them within a minute or
// two of their instances; one still there after this was kept (its removal
// failed).
const oldNodesGoneWithin = 10 * time.Minute

// finish counts the settled replacements whose old nodes are gone as done,
// their saving made, and those whose old nodes stay as kept.
func (d *Decider) finish(ctx context.Context, o *observation) {
	st := d.mem.consolidation
	if len(st.Finishing) == 0 {
		return
	}
	present := map[string]bool{}
	for _, n := range o.nodes {
		present[n.Name] = true
	}
	left, done, kept := consolidate.Finished(st.Finishing, func(n string) bool { return present[n] }, o.now, oldNodesGoneWithin)
	for _, f := range done {
		d.metrics.Replacement(f.Kind, "done", f.Saving)
	}
	for _, f := range kept {
		klog.FromContext(ctx).Info("Replacement's old nodes are still there; its saving is not counted as done", "old", f.Old,
			"after", oldNodesGoneWithin)
		d.metrics.Replacement(f.Kind, "kept", f.Saving)
	}
	st.Finishing = left
	d.mem.consolidation = st
}

// consolidationInput is what consolidate.Decide and Recheck read, but the
// candidates: the snapshot, the groups with prices and templates, the
// rules, the budgets left by the removals under way.
func (d *Decider) consolidationInput(o *observation, removing act.Removing) consolidate.Input {
	c, sd := d.opts.Consolidation, d.opts.ScaleDown
	in := consolidate.Input{Checker: d.checker, Groups: map[string]consolidate.Group{}, Deleting: removing.Nodes, PDBs: o.pdbs,
		Rules: scaledown.RuleOptions{SkipNodesWithSystemPods: sd.SkipNodesWithSystemPods, SkipNodesWithLocalStorage: sd.SkipNodesWithLocalStorage,
			SkipNodesWithCustomControllerPods: sd.SkipNodesWithCustomControllerPods},
		Min:      consolidate.MinSaving{Fraction: c.MinSavingFraction, PerHour: c.MinSavingPerHour},
		MaxNodes: c.MaxNodes, Budget: disruptionsLeft(o, c, d.sched.activeBudgets(), removing), Now: o.now}
	pricing, _ := d.cloud.Pricing()
	for _, g := range o.groups {
		if g.problem != "" {
			continue
		}
		minSize, maxSize := d.sched.effectiveSize(g)
		cg := consolidate.Group{Template: g.template, Target: g.target - removing.PerGroup[g.group.Id()], Min: minSize, Max: maxSize}
		if pricing != nil && g.template != nil {
			if p, err := cloudprovider.GroupNodePrice(pricing, g.group.Id(), g.template.Node, o.now, o.now.Add(time.Hour)); err == nil {
				cg.Price, cg.Priced = p, true
			}
		}
		in.Groups[g.group.Id()] = cg
	}
	var cands []scaledown.Candidate
	for _, n := range o.nodes {
		cands = append(cands, scaledown.Candidate{Name: n.Name})
	}
	in.Owners = d.observer.owners(d.checker.Snapshot(), cands, nil)
	return in
}

// replaceable are the nodes a replacement may take: ready nodes of a
// usable group, not annotated out, not being removed nor unneeded in
// scale-down's plan.
func (d *Decider) replaceable(o *observation, plan *scaledown.Plan) []consolidate.Candidate {
	skip := map[string]bool{}
	for _, u := range plan.Unneeded {
		skip[u.Node] = true
	}
	for _, n := range d.actuator.Removing().Nodes {
		skip[n] = true
	}
	var out []consolidate.Candidate
	for _, n := range o.nodes {
		gid := o.groupOfNode[n.Name]
		g := o.group(gid)
		if gid == "" || g == nil || g.problem != "" || skip[n.Name] || !o.ready(n.Name) || disabled(n) != "" ||
			act.HasTaint(n, scaledown.ToBeDeletedTaint) {
			continue
		}
		out = append(out, consolidate.Candidate{Name: n.Name, Group: gid})
	}
	return out
}

// disruptionsLeft is what the disruption budgets allow now: each group's
// (its own, or the default) of its target size, the cluster's of its nodes,
// each the tightest of the flag's and those of the windows open now
// (active), less the removals under way.
func disruptionsLeft(o *observation, c ConsolidationOptions, active nodeschedule.ActiveBudgets, removing act.Removing) scaledown.Disruptions {
	allowed := map[string]int{}
	for _, g := range o.groups {
		b, own := c.GroupBudgets[g.group.Id()]
		if !own {
			b = c.GroupBudget
		}
		allowed[g.group.Id()] = scaledown.Tightest(g.target, append([]scaledown.DisruptionBudget{b}, active.Groups[g.group.Id()]...)...)
	}
	cluster := scaledown.Tightest(len(o.nodes), append([]scaledown.DisruptionBudget{c.Budget}, active.Cluster...)...)
	return scaledown.DisruptionsLeft(allowed, cluster, removing.PerGroup)
}

// consolidating are the nodes the replacement in flight holds: its new
// nodes and its old ones, which scale-down leaves alone.
func (d *Decider) consolidating(o *observation) map[string]bool {
	f := d.mem.consolidation.InFlight
	if f == nil {
		return nil
	}
	return f.Protected(groupNodes(o, f.Group))
}

// groupNodes are the names of the group's nodes.
func groupNodes(o *observation, group string) []string {
	var out []string
	for _, n := range o.nodes {
		if o.groupOfNode[n.Name] == group {
			out = append(out, n.Name)
		}
	}
	return out
}
