package core

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// publisher makes each iteration known: the status ConfigMap, the gauges,
// and the capacity view the pod loop reads, each a rendering of the
// Iteration alone.
type publisher struct {
	metrics *Metrics
	status  *statusWriter
	// capacity is the last capacity view; onCapacity, when set, is told
	// which namespaces' waiting pods changed.
	capacity   atomic.Pointer[capacityView]
	onCapacity atomic.Pointer[func([]string)]
}

// publish writes the status ConfigMap and sets the gauges.
func (p *publisher) publish(ctx context.Context, r *Iteration) {
	s := StatusOf(r)
	setGauges(p.metrics, r)
	setCAGauges(p.metrics.CA, r)
	p.publishCapacity(r)
	if err := p.status.write(ctx, s); err != nil {
		klog.FromContext(ctx).Error(err, "Status not written")
		p.metrics.LoopError("apiCallError")
	}
}

// StatusOf renders an iteration as tidal's status ConfigMap says it (the
// statusWriter renders Cluster Autoscaler's layout from it).
func StatusOf(r *Iteration) Status {
	o := r.observed
	s := Status{Time: o.now.UTC().Format(time.RFC3339)}
	h := r.health
	s.ClusterWide.Health = HealthStatus{Status: "Healthy", Reason: h.Reason, NodeCounts: map[string]int{
		"registered": h.Registered, "ready": h.Ready, "notStarted": h.NotStarted, "unready": h.Unready}}
	if !h.Healthy {
		s.ClusterWide.Health.Status = "Unhealthy"
	}
	s.ClusterWide.ScaleUp = scaleUpStatus(r)
	s.ClusterWide.ScaleDown = scaleDownStatus(r)
	if r.scaleDown != nil {
		s.Evictions = r.scaleDown.evictions
	}
	s.ClusterWide.Replacing = replacingEntries(r.replacing)
	s.ClusterWide.Consolidation = consolidationStatus(r)
	for _, g := range o.nodeGroups {
		st := groupStatus(g, r.group(g.id))
		if r.schedules != nil {
			st.Scheduled = describeBounds(r.schedules.bounds[g.id])
		}
		s.NodeGroups = append(s.NodeGroups, st)
	}
	if r.schedules != nil {
		s.ScheduleProblems = r.schedules.problems
	}
	return s
}

func scaleUpStatus(r *Iteration) ScaleUpStatus {
	st := ScaleUpStatus{Status: "NoActivity", UnschedulablePods: r.observed.unschedulable,
		NotYetScheduled: len(r.observed.pending) - r.observed.unschedulable, Expendable: r.expendable, TooYoung: r.young}
	p := r.plan
	if p == nil {
		return st
	}
	st.FitExisting, st.Skipped, st.LastDecisionMs = p.FitExisting, p.Skipped, p.Timings.Total.Milliseconds()
	for _, u := range p.ScaleUps {
		e := ScaleUpEntry{NodeGroup: u.Group, From: u.From, To: u.To, Pods: len(u.Pods), Balanced: u.Balanced}
		for _, o := range u.Estimates {
			e.Options = append(e.Options, fmt.Sprintf("%s: +%d node(s) for %d pod(s)", o.Group, o.NodeCount, o.Pods))
		}
		for _, step := range u.Decision.Steps {
			e.Expander = append(e.Expander, fmt.Sprintf("%s kept [%s]", step.Strategy, strings.Join(step.Kept, ", ")))
		}
		st.ScaleUps = append(st.ScaleUps, e)
	}
	for _, n := range p.NoScaleUp {
		if len(n.Pods) == 0 {
			continue
		}
		ex := n.Pods[0]
		st.NoScaleUp = append(st.NoScaleUp, NoScaleUpEntry{Pods: len(n.Pods), Example: ex.Namespace + "/" + ex.Name,
			Reasons: formatReasons(n.Reasons)})
	}
	switch {
	case len(st.ScaleUps) > 0:
		st.Status = "InProgress"
	case len(st.NoScaleUp) > 0:
		st.Status = "NoScaleUpPossible"
	}
	return st
}

// maxStatusNodes bounds the per-node lists of the status ConfigMap.
const maxStatusNodes = 500

func scaleDownStatus(r *Iteration) ScaleDownStatus {
	st := ScaleDownStatus{Status: "Disabled"}
	sd := r.scaleDown
	if sd == nil || sd.plan == nil {
		if r.limits.scaleDownEnabled {
			st.Status = "NotRun"
		}
		return st
	}
	st.Status, st.Cooldown, st.PlanReused = "NoCandidates", sd.cooldown, sd.reused
	st.Removing = r.removing
	for _, u := range sd.plan.Unneeded {
		st.Candidates++
		if len(st.Unneeded) < maxStatusNodes {
			st.Unneeded = append(st.Unneeded, UnneededEntry{Node: u.Node, NodeGroup: u.Group, Empty: u.Empty(),
				Since: r.unneededSince[u.Node].UTC().Format(time.RFC3339), Utilization: fmt.Sprintf("%.2f", u.Utilization)})
		}
	}
	for _, u := range append(append([]scaledown.Unremovable(nil), sd.notEvenCandidates...), sd.plan.Unremovable...) {
		if u.Reason == scaledown.NotUnderutilized {
			st.NotUnderutilized++
			continue
		}
		st.Candidates++
		if len(st.Unremovable) < maxStatusNodes {
			st.Unremovable = append(st.Unremovable, UnremovableEntry{Node: u.Node, Reason: u.String()})
		}
	}
	switch {
	case len(st.Removing) > 0:
		st.Status = "InProgress"
	case st.Cooldown != "":
		st.Status = "InCooldown"
	case len(st.Unneeded) > 0:
		st.Status = "CandidatesPresent"
	}
	return st
}

func groupStatus(g groupSizes, v clusterstate.GroupView) NodeGroupStatus {
	st := NodeGroupStatus{Name: g.id, Health: "Healthy", MinSize: g.minSize, MaxSize: g.maxSize,
		Target: g.target, Registered: v.Registered, Ready: v.Ready, Upcoming: v.Upcoming}
	switch {
	case g.problem != "":
		st.Health, st.Reason = "Unusable", g.problem
	case v.BackedOff:
		st.Health, st.Reason = "BackedOff", v.BackoffReason
		st.BackoffTill = v.BackoffUntil.UTC().Format(time.RFC3339)
	}
	if f := v.LastFailure; f != nil {
		st.LastFailure = fmt.Sprintf("%s: %s", f.ErrorCode, f.ErrorMessage)
	}
	if !v.LastScaleUp.IsZero() {
		st.LastScaleUp = fmt.Sprintf("%s (+%d)", v.LastScaleUp.UTC().Format(time.RFC3339), v.LastScaleUpNodes)
	}
	return st
}

// setGauges renders an iteration into tidal's gauges (and those of Cluster
// Autoscaler's that tidal's share values with).
func setGauges(m *Metrics, r *Iteration) {
	safe := 0.0
	if r.health.Healthy {
		safe = 1
	}
	m.ClusterSafeToAutoscale.Set(safe)
	m.CA.ClusterSafeToAutoscale.Set(safe)
	for _, nodes := range []*prometheus.GaugeVec{m.Nodes, m.CA.NodesCount} {
		nodes.WithLabelValues("ready").Set(float64(r.health.Ready))
		nodes.WithLabelValues("unready").Set(float64(r.health.Unready))
		nodes.WithLabelValues("notStarted").Set(float64(r.health.NotStarted))
	}
	m.NodeGroups.Set(float64(len(r.observed.nodeGroups)))
	byReason := map[string]int{"expendable": r.expendable, "too_young": r.young, "unsupported": r.unsupported}
	if p := r.plan; p != nil {
		byReason["fits_existing_or_upcoming"] = p.FitExisting
		byReason["skipped_for_time"] = p.Skipped
		for _, u := range p.ScaleUps {
			byReason["scale_up_triggered"] += len(u.Pods)
		}
		for _, n := range p.NoScaleUp {
			byReason["no_node_group_fits"] += len(n.Pods)
		}
	}
	for _, reason := range []string{"expendable", "too_young", "unsupported", "fits_existing_or_upcoming", "skipped_for_time", "scale_up_triggered", "no_node_group_fits"} {
		m.UnschedulablePods.WithLabelValues(reason).Set(float64(byReason[reason]))
	}
	if sd := r.scaleDown; sd != nil && sd.plan != nil {
		counts := map[string]int{}
		for _, u := range append(append([]scaledown.Unremovable(nil), sd.notEvenCandidates...), sd.plan.Unremovable...) {
			counts[string(u.Reason)]++
		}
		m.UnremovableNodes.Reset()
		m.CA.UnremovableNodes.Reset()
		for reason, n := range counts {
			m.UnremovableNodes.WithLabelValues(reason).Set(float64(n))
			m.CA.UnremovableNodes.WithLabelValues(reason).Set(float64(n))
		}
	}
	for _, g := range r.observed.nodeGroups {
		id := g.id
		v := r.group(id)
		m.NodeGroupSize.WithLabelValues(id, "min").Set(float64(g.minSize))
		m.NodeGroupSize.WithLabelValues(id, "max").Set(float64(g.maxSize))
		m.NodeGroupSize.WithLabelValues(id, "target").Set(float64(g.target))
		m.NodeGroupSize.WithLabelValues(id, "upcoming").Set(float64(v.Upcoming))
		backoff := 0.0
		if v.BackedOff {
			backoff = 1
		}
		m.NodeGroupBackoff.WithLabelValues(id).Set(backoff)
	}
}
