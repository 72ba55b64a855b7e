package act

// Shadow mode (--dry-run): the loop decides as always but does not act.
// Each decision is recorded instead, once while it stands: a log line, the
// event the action would have recorded (the recorder tidal is given in
// dry-run prefixes every reason with DryRun), and the tidal_dry_run_*
// metrics. Nothing here writes to the cloud or to the cluster.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Dry-run decision kinds, the kind label of tidal_dry_run_decisions_total.
const (
	dryRunScaleUp     = "scale_up"
	dryRunScaleDown   = "scale_down"
	dryRunCancel      = "cancel"
	dryRunReplace     = "replace"
	dryRunConsolidate = "consolidate"
)

// dryRun remembers which decisions the last iteration recorded, so that a
// decision standing for many iterations (nothing acts on it) counts once.
type dryRun struct {
	// mu guards standing and current: nominations the scheduler cleared
	// are noted outside the iteration.
	mu sync.Mutex
	// standing are the decisions of the last iteration, current those of
	// this one; a decision is new when standing lacks it.
	standing, current map[string]bool
	// growth is, per node group, how many nodes this iteration's scale-ups
	// would have added: the would-be target size is the cloud's plus it.
	growth map[string]int
}

func newDryRun() *dryRun {
	return &dryRun{standing: map[string]bool{}, current: map[string]bool{}, growth: map[string]int{}}
}

// begin starts an iteration's bookkeeping.
func (d *dryRun) begin() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.current, d.growth = map[string]bool{}, map[string]int{}
}

// end makes this iteration's decisions the standing ones. An iteration
// that decided nothing (it failed, or stood aside) keeps them: a decision
// is new again only after an iteration that decided without it.
func (d *dryRun) end(decided bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if decided {
		d.standing = d.current
	}
}

// note records a decision under key and reports whether it is new.
func (d *dryRun) note(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.current[key] = true
	return !d.standing[key]
}

// DryRun is shadow mode's actuator: it records each decision once while it
// stands, and no write leaves it.
type DryRun struct {
	Deps
	dry *dryRun
}

var _ Actuator = (*DryRun)(nil)

// NewDryRun is shadow mode's actuator. Of d it uses the events, the status
// ConfigMap (for events), the metrics; never the client or the cloud.
func NewDryRun(d Deps) *DryRun { return &DryRun{Deps: d, dry: newDryRun()} }

// Begin starts an iteration's bookkeeping.
func (a *DryRun) Begin(context.Context) { a.dry.begin() }

// End makes this iteration's decisions the standing ones (when it
// decided), and sets the would-be target size of every group: the cloud's
// target plus what this iteration's scale-ups would have added.
func (a *DryRun) End(decided bool, targets map[string]int) {
	a.dry.end(decided)
	for id, target := range targets {
		a.Metrics.DryRunTargetSize.WithLabelValues(id).Set(float64(target + a.dry.growth[id]))
	}
}

// Grow records a scale-up the loop would have asked for.
func (a *DryRun) Grow(ctx context.Context, g Growth) Result {
	up := g.Up
	delta := up.To - up.From
	a.dry.growth[up.Group] += delta
	if !a.dry.note(growthKey(g)) {
		return Result{Group: up.Group}
	}
	klog.FromContext(ctx).Info("Dry run: would scale up", "nodeGroup", up.Group, "from", up.From, "to", up.To,
		"pods", len(up.Pods), "expander", up.Decision.Steps, "options", up.Estimates)
	a.Metrics.DryRunDecision(dryRunScaleUp, up.Group, delta)
	a.Events.OnStatus(a.Status, corev1.EventTypeNormal, "ScaledUpGroup",
		"would scale up node group %s: size %d -> %d (max: %d)", up.Group, up.From, up.To, up.Max)
	msg := fmt.Sprintf("pod would trigger scale-up: [{%s %d->%d (max: %d)}]", up.Group, up.From, up.To, up.Max)
	for _, p := range up.Pods {
		a.Events.OnPod(p, corev1.EventTypeNormal, "TriggeredScaleUp", "%s", msg)
	}
	return Result{Group: up.Group}
}

// Remove records the node removals the loop would have started; none
// starts.
func (a *DryRun) Remove(life context.Context, rs []Removal) []string {
	for _, r := range rs {
		key := fmt.Sprintf("%s/%s/%s", dryRunScaleDown, r.Group.Id(), r.Name)
		if !a.dry.note(key) {
			continue
		}
		klog.FromContext(life).Info("Dry run: would remove node", "node", r.Name, "nodeGroup", r.Group.Id(), "kind", r.Kind,
			"evictions", len(r.Pods))
		a.Metrics.DryRunDecision(dryRunScaleDown, r.Group.Id(), 1)
		if r.Node != nil {
			a.Events.OnNode(r.Node, corev1.EventTypeNormal, "ScaleDown", "node would be removed by tidal (%s), evicting %d pod(s)",
				r.Kind, len(r.Pods))
		}
	}
	return nil
}

// Cancel records requested nodes the loop would have cancelled: they are
// another autoscaler's to cancel; counted once.
func (a *DryRun) Cancel(ctx context.Context, c Cancel) Result {
	group, count := c.Cancel.Group, len(c.Instances)
	key := fmt.Sprintf("%s/%s/%d", dryRunCancel, group, count)
	if a.dry.note(key) {
		klog.FromContext(ctx).Info("Dry run: would cancel requested nodes", "nodeGroup", group, "count", count, "reason", c.Reason)
		a.Metrics.DryRunDecision(dryRunCancel, group, count)
	}
	return Result{Group: group}
}

// Replace records the nodes the loop would have marked, drained and
// deleted ahead of the cloud; none is touched.
func (a *DryRun) Replace(ctx, _ context.Context, rs []Replacement) map[string]error {
	for _, r := range rs {
		if !a.dry.note(fmt.Sprintf("%s/%s/%s", dryRunReplace, r.Group.Id(), r.Name)) {
			continue
		}
		klog.FromContext(ctx).Info("Dry run: would cordon, drain and delete a node the cloud takes away", "node", r.Name,
			"nodeGroup", r.Group.Id(), "kind", r.Mark.Kind, "deadline", r.Mark.Deadline, "evictions", len(r.Pods))
		a.Metrics.DryRunDecision(dryRunReplace, r.Group.Id(), 1)
		if r.Node != nil {
			a.Events.OnNode(r.Node, corev1.EventTypeWarning, "NodeInterrupted", "%s: node would be cordoned, drained and deleted by tidal",
				r.Mark.Kind)
		}
	}
	return nil
}

// SoftTaint writes no taint.
func (a *DryRun) SoftTaint(context.Context, SoftTaints) SoftTaintResult { return SoftTaintResult{} }

// CleanUpTaints takes no taint off: shadow mode wrote none.
func (a *DryRun) CleanUpTaints(context.Context, []*corev1.Node) error { return nil }

// Removing is nothing: no removal starts.
func (a *DryRun) Removing() Removing { return Removing{PerGroup: map[string]int{}} }

// Wait has no removal to wait for.
func (a *DryRun) Wait() {}

// dryRunStanding lists the decisions standing, for tests and the log.
func (d *dryRun) standingKeys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.standing))
}

// Standing lists the decisions standing, for tests and the log.
func (a *DryRun) Standing() []string { return a.dry.standingKeys() }
