package act

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Consolidation is a consolidating replacement whose new nodes to
// request: the old nodes are drained later (Remove), once the new ones
// are Ready.
type Consolidation struct {
	// Group is the new nodes' group; From its target size before.
	Group cloudprovider.NodeGroup
	From  int
	Count int
	// Kind is single or multi; Old the nodes to replace (nil entries:
	// the informer lost them) and OldNames their names.
	Kind     string
	Old      []*corev1.Node
	OldNames []string
	// OldCost, NewCost and Saving are per hour.
	OldCost, NewCost, Saving float64
}

func (r Consolidation) message(would string) string {
	return fmt.Sprintf("%sreplace node(s) %s by %d new node(s) of group %s: saving %.4f/h (%.4f/h -> %.4f/h)",
		would, strings.Join(r.OldNames, ", "), r.Count, r.Group.Id(), r.Saving, r.OldCost, r.NewCost)
}

// Consolidate asks the cloud for a replacement's new nodes and tells of
// it (a ConsolidationReplace event on the status ConfigMap and the old
// nodes). A refusal is logged and counted; the loop backs the group off.
func (a *Live) Consolidate(ctx context.Context, r Consolidation) Result {
	id := r.Group.Id()
	logger := klog.FromContext(ctx)
	logger.Info("Consolidating: requesting the new nodes of a replacement", "kind", r.Kind, "old", r.OldNames, "nodeGroup", id,
		"count", r.Count, "savingPerHour", r.Saving)
	if err := bounded(ctx, "increase size", func(ctx context.Context) error { return r.Group.IncreaseSize(ctx, r.Count) }); err != nil {
		logger.Error(err, "Replacement's scale-up failed", "nodeGroup", id)
		a.Metrics.FailedScaleUp(id, "cloudProviderError", r.Count)
		a.Metrics.Replacement(r.Kind, "refused", r.Saving)
		a.Events.OnStatus(a.Status, corev1.EventTypeWarning, "FailedToScaleUpGroup", "scale-up of node group %s by %d for a replacement failed: %v",
			id, r.Count, err)
		return Result{Group: id, Refused: err}
	}
	a.Metrics.ScaledUp(id, r.Count)
	a.Metrics.Activity("scaleUp", a.Clock.Now())
	a.Metrics.Replacement(r.Kind, "started", r.Saving)
	a.tellReplace(r, "")
	return Result{Group: id, Grown: r.Count}
}

// tellReplace records the ConsolidationReplace events.
func (a Deps) tellReplace(r Consolidation, would string) {
	msg := r.message(would)
	a.Events.OnStatus(a.Status, corev1.EventTypeNormal, "ConsolidationReplace", "%s", msg)
	for _, n := range r.Old {
		if n != nil {
			a.Events.OnNode(n, corev1.EventTypeNormal, "ConsolidationReplace", "%s", msg)
		}
	}
}

// Consolidate records a replacement the loop would have started; no node
// is requested.
func (a *DryRun) Consolidate(ctx context.Context, r Consolidation) Result {
	id := r.Group.Id()
	if !a.dry.note(fmt.Sprintf("%s/%s/%s/%d", dryRunConsolidate, strings.Join(r.OldNames, ","), id, r.Count)) {
		return Result{Group: id}
	}
	klog.FromContext(ctx).Info("Dry run: would replace nodes", "kind", r.Kind, "old", r.OldNames, "nodeGroup", id, "count", r.Count,
		"savingPerHour", r.Saving)
	a.Metrics.DryRunDecision(dryRunConsolidate, id, r.Count)
	a.tellReplace(r, "would ")
	return Result{Group: id}
}
