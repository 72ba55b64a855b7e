package core

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

// cancel drops requested nodes that will never come: failed launches are
// cancelled (the target shrinks), and nodes that registered but never
// became Ready within the provision time are deleted.
func (l *NodeLoop) cancel(ctx context.Context, o *observation, c clusterstate.Cancel) {
	logger := klog.FromContext(ctx)
	g := o.group(c.Group)
	if g == nil {
		return
	}
	if l.opts.DryRun {
		// The nodes are another autoscaler's to cancel; counted once.
		l.dryRunCancelled(ctx, c.Group, len(c.Instances), c.Reason)
		return
	}
	reason := "failed"
	if strings.Contains(c.Reason, "ProvisionTimeout") {
		reason = "timeout"
	}
	l.cfg.Metrics.FailedScaleUp(c.Group, reason)
	logger.Info("Cancelling requested nodes that will not come", append([]any{"nodeGroup", c.Group, "count", len(c.Instances),
		"reason", c.Reason}, l.sinceReported(c)...)...)
	eventReason := "FailedToScaleUpGroup"
	if reason == "timeout" {
		eventReason = "ScaleUpTimedOut"
	}
	l.events.OnStatus(l.publisher.status, corev1.EventTypeWarning, eventReason, "node group %s: %d requested node(s) cancelled: %s", c.Group, len(c.Instances), c.Reason)
	// The pods that waited for the nodes hear it too; the decision that
	// follows in this iteration tells them which group is used instead.
	l.tellFailed(l.waiters.waitingFor(c.Group, o.pending), c.Group, c.Reason)

	switch {
	case c.Failed:
		// Launches that failed left nothing to delete: lower the target.
		l.decreaseTarget(ctx, g, len(c.Instances))
	default:
		l.deleteLate(ctx, g, c)
	}
	var err error
	if g.target, err = g.group.TargetSize(); err != nil {
		g.problem = "cannot read target size after cancelling: " + err.Error()
	}
	if g.instances, err = g.group.Nodes(); err != nil {
		g.problem = "cannot list instances after cancelling: " + err.Error()
	}
}

// sinceReported is, for failed launches the cloud told of, how long ago
// it did, as log values: the delay from the cloud's report to the loop
// acting on it.
func (l *NodeLoop) sinceReported(c clusterstate.Cancel) []any {
	at, ok := l.errorsReported.LoadAndDelete(c.Group)
	if !c.Failed || !ok {
		return nil
	}
	return []any{"sinceReported", l.clock.Since(at.(time.Time))}
}

// deleteLate removes nodes that did not become Ready in time: registered
// ones by their Node, the others by a stand-in Node carrying the instance's
// providerID (as Cluster Autoscaler does), falling back to lowering the
// target when the provider refuses.
func (l *NodeLoop) deleteLate(ctx context.Context, g *groupObservation, c clusterstate.Cancel) {
	registered := map[string]bool{}
	var nodes []*corev1.Node
	for _, name := range c.Registered {
		if n, err := l.nodes.Get(name); err == nil {
			nodes = append(nodes, n)
			registered[n.Spec.ProviderID] = true
		}
	}
	unregistered := 0
	for _, in := range c.Instances {
		if !registered[in.Id] {
			nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Id}, Spec: corev1.NodeSpec{ProviderID: in.Id}})
			unregistered++
		}
	}
	if err := g.group.DeleteNodes(nodes); err != nil {
		klog.FromContext(ctx).Error(err, "Could not delete nodes that did not come in time", "nodeGroup", g.group.Id())
		l.decreaseTarget(ctx, g, unregistered)
		return
	}
	l.cfg.Metrics.CA.OldUnregistered.Add(float64(unregistered))
}

func (l *NodeLoop) decreaseTarget(ctx context.Context, g *groupObservation, n int) {
	if n <= 0 {
		return
	}
	if err := g.group.DecreaseTargetSize(-n); err != nil {
		klog.FromContext(ctx).Error(err, "Could not cancel requested nodes", "nodeGroup", g.group.Id(), "count", n)
	}
}

func (o *observation) group(id string) *groupObservation {
	for _, g := range o.groups {
		if g.group.Id() == id {
			return g
		}
	}
	return nil
}
