package core

// Scheduled node group sizes and allocation triggers (the tidal-schedules
// ConfigMap): the loop reads the ConfigMap each iteration, raises groups
// to their scheduled minimum and adds the nodes of the triggers that fire.
// What to do is decided by nodeschedule; this is the shell around it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// maxStatusProblems is how many problems of the ConfigMap the status
// names.
const maxStatusProblems = 5

// schedules is what the loop keeps of the tidal-schedules ConfigMap
// between and within iterations.
type schedules struct {
	source *configMapSource
	// triggers is the allocation triggers' tracking, carried over.
	triggers nodeschedule.TriggerState
	// config and bounds are this iteration's: the parsed ConfigMap and
	// what its active entries set per node group.
	config nodeschedule.Config
	bounds map[string]nodeschedule.Bounds
	// budgets are the disruption budgets of the windows open now.
	budgets nodeschedule.ActiveBudgets
	// next is when the bounds or the triggers' decision may next change
	// (zero: not before the next scan); the loop wakes then.
	next time.Time
	// logged are the problems last logged.
	logged []string
	// parsedFrom is what config was parsed from: the ConfigMap's resource
	// version and the node groups it was checked against.
	parsedFrom string
}

// due is when the schedules next want an iteration (zero: none).
func (s *schedules) due() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.next
}

// scheduleReport is what the iteration's report says of the schedules.
type scheduleReport struct {
	problems []string
	bounds   map[string]nodeschedule.Bounds
}

// readSchedules parses the ConfigMap against the observed node groups,
// reports its problems and sets the iteration's bounds. An absent
// ConfigMap is no schedules.
func (d *Decider) readSchedules(ctx context.Context, o *observation, report *Iteration) {
	s := d.sched
	cm := s.source.get(nodeschedule.ConfigMapName)
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	// Parsed again only when the ConfigMap or the node groups changed.
	if from := scheduleSource(cm, o); from != s.parsedFrom {
		s.config = nodeschedule.Parse(data, func(id string) bool { return o.group(id) != nil })
		s.parsedFrom = from
	}
	s.bounds, s.next = s.config.At(o.now)
	var budgetsChange time.Time
	s.budgets, budgetsChange = s.config.BudgetsAt(o.now)
	if !budgetsChange.IsZero() && (s.next.IsZero() || budgetsChange.Before(s.next)) {
		s.next = budgetsChange
	}
	report.schedules = &scheduleReport{bounds: s.bounds, problems: s.reportProblems(ctx, cm, d.events)}
	for _, g := range o.groups {
		d.metrics.ScheduledMin(g.group.Id(), s.bounds[g.group.Id()].Min)
	}
}

// scheduleSource names what parsing the schedules reads: the ConfigMap's
// UID and resource version ("-" when absent) and the node groups' IDs, in
// an order of their own.
func scheduleSource(cm *corev1.ConfigMap, o *observation) string {
	ids := make([]string, 0, len(o.groups))
	for _, g := range o.groups {
		ids = append(ids, g.group.Id())
	}
	slices.Sort(ids)
	version := "-"
	if cm != nil {
		version = string(cm.UID) + "/" + cm.ResourceVersion
	}
	return version + "|" + strings.Join(ids, ",")
}

// reportProblems tells of the malformed items of the ConfigMap cm
// (events, the log) and returns the lines for the status.
func (s *schedules) reportProblems(ctx context.Context, cm *corev1.ConfigMap, events *telemetry.Events) []string {
	problems := make([]string, len(s.config.Problems))
	for i, p := range s.config.Problems {
		problems[i] = p.Error()
	}
	// Logged when they change, not at every iteration; the events are
	// deduplicated.
	changed := !slices.Equal(problems, s.logged)
	for _, p := range s.config.Problems {
		if changed {
			klog.FromContext(ctx).Info("Malformed item in the schedules ConfigMap is ignored", "configMap", nodeschedule.ConfigMapName,
				"key", p.Key, "item", p.Item, "err", p.Err)
		}
		events.OnConfigMap(cm, corev1.EventTypeWarning, "ScheduleInvalid", "%s; it is ignored, the other items apply", p.Error())
	}
	s.logged = problems
	// The status stays small; the events and the log name them all.
	status := slices.Clone(problems[:min(len(problems), maxStatusProblems)])
	if more := len(problems) - maxStatusProblems; more > 0 {
		status = append(status, fmt.Sprintf("and %d more (see the ConfigMap's events)", more))
	}
	return status
}

// activeBudgets are the disruption budgets of the windows open this
// iteration.
func (s *schedules) activeBudgets() nodeschedule.ActiveBudgets {
	if s == nil {
		return nodeschedule.ActiveBudgets{}
	}
	return s.budgets
}

// effectiveSize is a group's size range this iteration: the cloud's,
// narrowed by the active schedule entries.
func (s *schedules) effectiveSize(g *groupObservation) (minSize, maxSize int) {
	var b nodeschedule.Bounds
	if s != nil {
		b = s.bounds[g.group.Id()]
	}
	return nodeschedule.Effective(g.group.MinSize(), g.group.MaxSize(), b)
}

// triggeredWithin says which allocation trigger of the group fired within
// d before now ("" when none): the nodes it asked for, with no pod
// waiting, may still be starting.
func (s *schedules) triggeredWithin(group string, now time.Time, d time.Duration) string {
	if s == nil {
		return ""
	}
	for _, t := range s.config.Triggers {
		if last, ok := s.triggers.LastTrigger[t.Name]; ok && t.NodeGroup == group && now.Sub(last) < d {
			return "allocation trigger " + t.Name + " asked for its nodes"
		}
	}
	return ""
}

// enforceSchedules raises groups below their scheduled minimum (or, with
// --enforce-node-group-min-size, below any minimum), then adds
// the nodes of the allocation triggers that fire, independent of pending
// pods.
func (d *Decider) enforceSchedules(ctx context.Context, o *observation, report *Iteration) {
	s := d.sched
	groups := s.groups(o, d.state)
	for _, r := range nodeschedule.Raises(groups, s.bounds, d.opts.EnforceNodeGroupMinSize) {
		why := "minimum size (--enforce-node-group-min-size)"
		if len(r.Entries) > 0 {
			why = fmt.Sprintf("scheduled minimum of %s", strings.Join(r.Entries, ", "))
		}
		d.raise(ctx, o, report, r, why, "")
	}
	rates := nodeschedule.Rates(nodeUsages(o))
	d.metrics.ResetAllocationRates()
	for k, v := range rates {
		scope := k.Scope
		if scope == "" {
			scope = nodeschedule.ScopeCluster
		}
		d.metrics.AllocationRate(scope, k.Resource, v)
	}
	dec := nodeschedule.Decide(s.config.Triggers, rates, s.groups(o, d.state), s.triggers, o.now)
	previous := s.triggers
	s.triggers = dec.State
	if !dec.Next.IsZero() && (s.next.IsZero() || dec.Next.Before(s.next)) {
		s.next = dec.Next
	}
	for _, r := range dec.Raises {
		name := r.Entries[0]
		if !d.raise(ctx, o, report, r, "allocation trigger "+name, name) {
			// The cloud refused: no cooldown starts; the group is backed
			// off, and the trigger fires again once it is usable.
			if last, ok := previous.LastTrigger[name]; ok {
				s.triggers.LastTrigger[name] = last
			} else {
				delete(s.triggers.LastTrigger, name)
			}
		}
	}
}

// groups are the observed groups with their effective range and current
// target; state tells which are backed off.
func (s *schedules) groups(o *observation, state *clusterstate.Tracker) []nodeschedule.Group {
	out := make([]nodeschedule.Group, 0, len(o.groups))
	for _, g := range o.groups {
		minSize, maxSize := s.effectiveSize(g)
		out = append(out, nodeschedule.Group{ID: g.group.Id(), Target: g.target, Min: minSize, Max: maxSize,
			Unavailable: g.problem != "" || state.Group(g.group.Id()).BackedOff})
	}
	return out
}

// raise has the actuator grow a group as r says, why being the reason for
// the log and the event; trigger names the allocation trigger, if that is
// why. It reports false when the cloud refused.
func (d *Decider) raise(ctx context.Context, o *observation, report *Iteration, r nodeschedule.Raise, why, trigger string) bool {
	g := o.group(r.Group)
	_, maxSize := d.sched.effectiveSize(g)
	up := scaleup.ScaleUp{Group: r.Group, From: r.From, To: r.To, Max: maxSize}
	res := d.actuator.Grow(ctx, act.Growth{Group: g.group, Up: up, Why: why, Trigger: trigger})
	d.apply(o, report, res)
	return res.Refused == nil
}

// describeBounds says what active entries set, for the status ("" when
// none is active).
func describeBounds(b nodeschedule.Bounds) string {
	if len(b.Entries) == 0 {
		return ""
	}
	s := fmt.Sprintf("min %d", b.Min)
	if b.HasMax {
		s += fmt.Sprintf(", max %d", b.Max)
	}
	return s + " (" + strings.Join(b.Entries, ", ") + ")"
}

// nodeUsages are the nodes of node groups and others with their requests
// and allocatable, for the allocation rates.
func nodeUsages(o *observation) []nodeschedule.NodeUsage {
	out := make([]nodeschedule.NodeUsage, 0, len(o.nodes))
	for _, ni := range o.snapshot.Infos() {
		n := ni.Node()
		req := ni.GetRequested()
		out = append(out, nodeschedule.NodeUsage{Group: o.groupOfNode[n.Name], Ready: o.ready(n.Name),
			RequestedCPU: req.GetMilliCPU(), RequestedMemory: req.GetMemory(),
			AllocatableCPU: n.Status.Allocatable.Cpu().MilliValue(), AllocatableMemory: n.Status.Allocatable.Memory().Value()})
	}
	return out
}
