package core

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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// Dry-run decision kinds, the kind label of tidal_dry_run_decisions_total.
const (
	dryRunScaleUp   = "scale_up"
	dryRunScaleDown = "scale_down"
	dryRunCancel    = "cancel"
)

// dryRun remembers which decisions the last iteration recorded, so that a
// decision standing for many iterations (nothing acts on it) counts once.
type dryRun struct {
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
	d.current, d.growth = map[string]bool{}, map[string]int{}
}

// end makes this iteration's decisions the standing ones. An iteration
// that decided nothing (it failed, or stood aside) keeps them: a decision
// is new again only after an iteration that decided without it.
func (d *dryRun) end(decided bool) {
	if decided {
		d.standing = d.current
	}
}

// note records a decision under key and reports whether it is new.
func (d *dryRun) note(key string) bool {
	d.current[key] = true
	return !d.standing[key]
}

// dryRunScaleUp records a scale-up the loop would have asked for.
func (l *NodeLoop) dryRunScaleUp(ctx context.Context, up scaleup.ScaleUp) scaleup.Result {
	delta := up.To - up.From
	l.dry.growth[up.Group] += delta
	key := fmt.Sprintf("%s/%s/%d->%d", dryRunScaleUp, up.Group, up.From, up.To)
	if !l.dry.note(key) {
		return scaleup.Result{Group: up.Group}
	}
	klog.FromContext(ctx).Info("Dry run: would scale up", "nodeGroup", up.Group, "from", up.From, "to", up.To,
		"pods", len(up.Pods), "expander", up.Decision.Steps, "options", up.Estimates)
	l.cfg.Metrics.DryRunDecision(dryRunScaleUp, up.Group, delta)
	l.events.OnStatus(l.publisher.status, corev1.EventTypeNormal, "ScaledUpGroup",
		"would scale up node group %s: size %d -> %d (max: %d)", up.Group, up.From, up.To, up.Max)
	msg := fmt.Sprintf("pod would trigger scale-up: [{%s %d->%d (max: %d)}]", up.Group, up.From, up.To, up.Max)
	for _, p := range up.Pods {
		l.events.OnPod(p, corev1.EventTypeNormal, "TriggeredScaleUp", "%s", msg)
	}
	return scaleup.Result{Group: up.Group}
}

// dryRunRemoval records a node removal the loop would have started.
func (l *NodeLoop) dryRunRemoval(ctx context.Context, r scaledown.Removal, node *corev1.Node) {
	key := fmt.Sprintf("%s/%s/%s", dryRunScaleDown, r.Group, r.Node)
	if !l.dry.note(key) {
		return
	}
	klog.FromContext(ctx).Info("Dry run: would remove node", "node", r.Node, "nodeGroup", r.Group, "kind", r.Kind,
		"evictions", len(r.Evict))
	l.cfg.Metrics.DryRunDecision(dryRunScaleDown, r.Group, 1)
	if node != nil {
		l.events.OnNode(node, corev1.EventTypeNormal, "ScaleDown", "node would be removed by tidal (%s), evicting %d pod(s)",
			r.Kind, len(r.Evict))
	}
}

// dryRunCancelled records requested nodes the loop would have cancelled.
func (l *NodeLoop) dryRunCancelled(ctx context.Context, group string, count int, reason string) {
	key := fmt.Sprintf("%s/%s/%d", dryRunCancel, group, count)
	if !l.dry.note(key) {
		return
	}
	klog.FromContext(ctx).Info("Dry run: would cancel requested nodes", "nodeGroup", group, "count", count, "reason", reason)
	l.cfg.Metrics.DryRunDecision(dryRunCancel, group, count)
}

// dryRunTargets sets the would-be target size of every group: the cloud's
// target plus what this iteration's scale-ups would have added.
func (l *NodeLoop) dryRunTargets(o *observation) {
	for _, g := range o.groups {
		l.cfg.Metrics.DryRunTargetSize.WithLabelValues(g.group.Id()).Set(float64(g.target + l.dry.growth[g.group.Id()]))
	}
}

// dryRunStanding lists the decisions standing, for tests and the log.
func (d *dryRun) standingKeys() []string { return slices.Sorted(maps.Keys(d.standing)) }
