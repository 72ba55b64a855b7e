package scaledown

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Tracking maps each unneeded node to since when it has been unneeded
// without a break.
type Tracking map[string]time.Time

// Track carries the tracking over to a new plan: a node unneeded before
// keeps its time; a newly unneeded one starts now, or at the time its
// DeletionCandidate taint names (taintedSince) when that is earlier, so a
// restart does not start the wait over; a node needed again drops out.
func Track(prev Tracking, plan *Plan, taintedSince map[string]time.Time, now time.Time) Tracking {
	next := make(Tracking, len(plan.Unneeded))
	for _, u := range plan.Unneeded {
		t, ok := prev[u.Node]
		if !ok {
			t = now
			if tainted := taintedSince[u.Node]; !tainted.IsZero() && tainted.Before(now) {
				t = tainted
			}
		}
		next[u.Node] = t
	}
	return next
}

// Cooldowns are the events after which scale-down waits.
type Cooldowns struct {
	// ScaleUpNow: a scale-up was requested in this iteration.
	ScaleUpNow                           bool
	LastScaleUp, LastDelete, LastFailure time.Time
}

// Delays are how long scale-down waits after each event
// (--scale-down-delay-after-add, -delete, -failure).
type Delays struct {
	AfterAdd, AfterDelete, AfterFailure time.Duration
}

// cooldown is one wait: delay after since.
type cooldown struct {
	since time.Time
	delay time.Duration
	why   string
}

func (c Cooldowns) list(d Delays) []cooldown {
	return []cooldown{
		{c.LastScaleUp, d.AfterAdd, "--scale-down-delay-after-add since the last scale-up"},
		{c.LastDelete, d.AfterDelete, "--scale-down-delay-after-delete since the last removal"},
		{c.LastFailure, d.AfterFailure, "--scale-down-delay-after-failure since the last failed removal"},
	}
}

// Waiting says why scale-down must wait at now, or "".
func (c Cooldowns) Waiting(d Delays, now time.Time) string {
	if c.ScaleUpNow {
		return "a scale-up was requested in this iteration"
	}
	for _, w := range c.list(d) {
		if !w.since.IsZero() && now.Before(w.since.Add(w.delay)) {
			return w.why
		}
	}
	return ""
}

// end is when the last of the waits ends (zero: none was ever started).
func (c Cooldowns) end(d Delays) time.Time {
	var end time.Time
	for _, w := range c.list(d) {
		if !w.since.IsZero() && w.since.Add(w.delay).After(end) {
			end = w.since.Add(w.delay)
		}
	}
	return end
}

// Times are how long a node of a group must be unneeded (or, unready,
// unneeded) before it is removed: --scale-down-unneeded-time and
// --scale-down-unready-time, or the group's own options.
type Times struct {
	Unneeded, Unready time.Duration
}

// Resources are a node's capacity.
type Resources struct {
	MilliCores, Memory int64
}

// RemovalInput is what Removals reads: the plan and its tracking, the
// groups' times, the cooldowns, and the budgets.
type RemovalInput struct {
	Plan     *Plan
	Tracking Tracking
	// Groups holds the times of each group that still exists; a node of
	// another group is not removed.
	Groups    map[string]Times
	Cooldowns Cooldowns
	Delays    Delays
	// Parallelism and DrainParallelism are how many removals, and how many
	// of nodes with pods to move, may start now (the flags' maximum less
	// those under way).
	Parallelism, DrainParallelism int
	// Capacity is each node's capacity (a node missing is gone); Cluster is
	// the cluster's total and Min the least it keeps
	// (--cores-total, --memory-total minimums).
	Capacity     map[string]Resources
	Cluster, Min Resources
	// Pictured are the UIDs of pods that exist only in the node loop's mind
	// (headroom, provision-ahead): a node whose other pods are all DaemonSet
	// or mirror pods is empty, with nothing to evict.
	Pictured map[types.UID]bool
	// Disruptions, when set, is how many nodes the disruption budgets let
	// go now, per group and in the cluster.
	Disruptions *Disruptions
	// Placing counts the pods the drains moved that wait for a node
	// (scaledown.Placing): while one does, no drain starts, so the pods
	// of a drain are placed before the next drain evicts.
	Placing int
	Now     time.Time
}

// Removal kinds, the label of the scaled-down metric.
const (
	KindEmpty         = "empty"
	KindUnderutilized = "underutilized"
	KindUnready       = "unready"
	// KindReplaced: a node a replacement drains once its new nodes are Ready.
	KindReplaced = "replaced"
)

// Removal is a node to remove now.
type Removal struct {
	Unneeded
	Kind string
	// Evict are the real pods to evict (pictured ones left out).
	Evict []*corev1.Pod
}

// RemovalDecision is which unneeded nodes go now.
type RemovalDecision struct {
	Start []Removal
	// Waiting, when set, is why scale-down waits (then nothing starts).
	Waiting string
	// NextDue is when the first unneeded node not started will have been
	// unneeded long enough with no cooldown holding it (zero: none), so
	// the loop can wake then.
	NextDue time.Time
}

// Removals picks the unneeded nodes to remove now: those unneeded (or
// unready) long enough for their group, in the plan's order (empty ones
// first), while the parallelism budgets last and the cluster stays above its
// minimum cores and memory; none while a cooldown holds, and no node with
// pods to move while pods an earlier drain moved wait for a node.
func Removals(in RemovalInput) RemovalDecision {
	out := RemovalDecision{Waiting: in.Cooldowns.Waiting(in.Delays, in.Now)}
	started := map[string]bool{}
	if out.Waiting == "" {
		out.Start = startNow(in)
		for _, r := range out.Start {
			started[r.Node] = true
		}
	}
	out.NextDue = nextDue(in, started)
	return out
}

// startNow is Removals' choice when no cooldown holds.
func startNow(in RemovalInput) []Removal {
	budget, drains, left := in.Parallelism, in.DrainParallelism, in.Cluster
	disruptions := &Disruptions{}
	if in.Disruptions != nil {
		disruptions = in.Disruptions.Clone()
	}
	var out []Removal
	for _, u := range in.Plan.Unneeded {
		if budget <= 0 {
			break
		}
		c, exists := in.Capacity[u.Node]
		if due, ok := in.due(u); !exists || !ok || in.Now.Before(due) || !u.Empty() && (drains <= 0 || in.Placing > 0) {
			continue
		}
		if left.MilliCores-c.MilliCores < in.Min.MilliCores || left.Memory-c.Memory < in.Min.Memory || !disruptions.Take(u.Group) {
			continue
		}
		left.MilliCores, left.Memory = left.MilliCores-c.MilliCores, left.Memory-c.Memory
		budget--
		if !u.Empty() {
			drains--
		}
		out = append(out, in.removal(u))
	}
	return out
}

// removal is the removal of u, with its kind and the pods to evict.
func (in RemovalInput) removal(u Unneeded) Removal {
	r := Removal{Unneeded: u, Kind: KindUnderutilized}
	for _, p := range u.Pods.ToMove {
		if !in.Pictured[p.UID] && !in.Plan.arriving[p.UID] {
			r.Evict = append(r.Evict, p)
		}
	}
	switch {
	case u.Unready:
		r.Kind = KindUnready
	case len(r.Evict) == 0:
		r.Kind = KindEmpty
	}
	return r
}

// due is when u will have been unneeded (or unready) long enough for its
// group; false when it is not tracked or its group is gone.
func (in RemovalInput) due(u Unneeded) (time.Time, bool) {
	since, tracked := in.Tracking[u.Node]
	times, exists := in.Groups[u.Group]
	if !tracked || !exists {
		return time.Time{}, false
	}
	if u.Unready {
		return since.Add(times.Unready), true
	}
	return since.Add(times.Unneeded), true
}

// nextDue is when the first unneeded node not started becomes due, or the
// end of the cooldowns when later; zero when no node will.
func nextDue(in RemovalInput, started map[string]bool) time.Time {
	var due time.Time
	for _, u := range in.Plan.Unneeded {
		t, ok := in.due(u)
		if !ok || started[u.Node] || !t.After(in.Now) {
			continue
		}
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	if due.IsZero() {
		return due
	}
	if end := in.Cooldowns.end(in.Delays); end.After(due) {
		due = end
	}
	return due
}
