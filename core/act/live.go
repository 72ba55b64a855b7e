package act

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/core/interrupt"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// Deps are what the actuators work with.
type Deps struct {
	Client kubernetes.Interface
	// Pods is the pod informer's lister: drains read from it whether
	// their evicted pods are gone; PodsSynced tells whether it has synced.
	Pods       corelisters.PodLister
	PodsSynced func() bool
	Events     *telemetry.Events
	// Status is the status ConfigMap, which scale-up and removal events
	// are recorded on.
	Status  telemetry.StatusObject
	Clock   clock.Clock
	Metrics *telemetry.Metrics
	// Source is the object a pod the loop only pictures stands for (the
	// autoscaler that asked for it ahead, the workload that wants
	// headroom); nil for any other pod.
	Source  func(*corev1.Pod) *corev1.ObjectReference
	Options Options
}

// Live is the actuator that acts.
type Live struct {
	Deps
	removals
}

var _ Actuator = (*Live)(nil)

// NewLive is the actuator that acts.
func NewLive(d Deps) *Live {
	return &Live{Deps: d, removals: removals{inProgress: map[string]Removal{}, replacing: map[string]Replacement{}, replaced: map[string]time.Time{}, strayTaints: map[string]bool{}}}
}

// End has nothing to do: what the live actuator did is in its results.
func (a *Live) End(bool, map[string]int) {}

// Grow asks the cloud for the nodes and tells the pods. A refusal is
// logged, counted and told; the loop backs the group off.
func (a *Live) Grow(ctx context.Context, g Growth) Result {
	up := g.Up
	delta := up.To - up.From
	logger := klog.FromContext(ctx)
	if g.Why == "" {
		logger.Info("Scaling up", "nodeGroup", up.Group, "from", up.From, "to", up.To, "pods", len(up.Pods),
			"expander", up.Decision.Steps, "options", up.Estimates, "packing", g.Packing)
	} else {
		logger.Info("Scaling up without pending pods", "nodeGroup", up.Group, "from", up.From, "to", up.To, "reason", g.Why)
	}
	if err := bounded(ctx, "increase size", func(ctx context.Context) error { return g.Group.IncreaseSize(ctx, delta) }); err != nil {
		logger.Error(err, "Scale-up failed", "nodeGroup", up.Group)
		a.Metrics.FailedScaleUp(up.Group, "cloudProviderError", delta)
		a.Events.OnStatus(a.Status, corev1.EventTypeWarning, "FailedToScaleUpGroup", "scale-up of node group %s by %d failed: %v",
			up.Group, delta, err)
		a.tellFailed(up.Pods, up.Group, err.Error())
		return Result{Group: up.Group, Refused: err}
	}
	note := picturedNote(up.Pods)
	if g.Why != "" {
		note = " for the " + g.Why
	}
	a.grown(up, note)
	if g.Trigger != "" {
		a.Metrics.AllocationTriggered(g.Trigger, up.Group)
	}
	return Result{Group: up.Group, Grown: delta}
}

// Cancel drops requested nodes that will never come: failed launches are
// cancelled (the target shrinks), and nodes that registered but never
// became Ready within the provision time are deleted. It reads the group's
// sizes again after.
func (a *Live) Cancel(ctx context.Context, c Cancel) Result {
	reason := "failed"
	if strings.Contains(c.Reason, "ProvisionTimeout") {
		reason = "timeout"
	}
	a.Metrics.FailedScaleUp(c.Cancel.Group, reason, len(c.Instances))
	values := []any{"nodeGroup", c.Cancel.Group, "count", len(c.Instances), "reason", c.Reason}
	if c.SinceReported > 0 {
		values = append(values, "sinceReported", c.SinceReported)
	}
	klog.FromContext(ctx).Info("Cancelling requested nodes that will not come", values...)
	eventReason := "FailedToScaleUpGroup"
	if reason == "timeout" {
		eventReason = "ScaleUpTimedOut"
	}
	a.Events.OnStatus(a.Status, corev1.EventTypeWarning, eventReason, "node group %s: %d requested node(s) cancelled: %s",
		c.Cancel.Group, len(c.Instances), c.Reason)
	// The pods that waited for the nodes hear it too; the decision that
	// follows in this iteration tells them which group is used instead.
	a.tellFailed(c.Waiting, c.Cancel.Group, c.Reason)
	if c.Failed {
		// Launches that failed left nothing to delete: lower the target.
		a.decreaseTarget(ctx, c, len(c.Instances))
	} else {
		a.deleteLate(ctx, c)
	}
	s := &Sizes{}
	s.Target, s.TargetErr = c.Group.TargetSize()
	s.Instances, s.InstancesErr = c.Group.Nodes()
	return Result{Group: c.Cancel.Group, Sizes: s}
}

// deleteLate removes nodes that did not become Ready in time: registered
// ones by their Node, the others by a stand-in Node carrying the instance's
// providerID (as Cluster Autoscaler does), falling back to lowering the
// target when the provider refuses.
func (a *Live) deleteLate(ctx context.Context, c Cancel) {
	registered := map[string]bool{}
	nodes := append([]*corev1.Node(nil), c.Nodes...)
	for _, n := range c.Nodes {
		registered[n.Spec.ProviderID] = true
	}
	unregistered := 0
	for _, in := range c.Instances {
		if !registered[in.Id] {
			nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Id}, Spec: corev1.NodeSpec{ProviderID: in.Id}})
			unregistered++
		}
	}
	if err := bounded(ctx, "delete nodes", func(ctx context.Context) error { return c.Group.DeleteNodes(ctx, nodes) }); err != nil {
		klog.FromContext(ctx).Error(err, "Could not delete nodes that did not come in time", "nodeGroup", c.Cancel.Group)
		a.decreaseTarget(ctx, c, unregistered)
		return
	}
	a.Metrics.CA.OldUnregistered.Add(float64(unregistered))
}

func (a *Live) decreaseTarget(ctx context.Context, c Cancel, n int) {
	if n <= 0 {
		return
	}
	if err := bounded(ctx, "decrease target size", func(ctx context.Context) error { return c.Group.DecreaseTargetSize(ctx, -n) }); err != nil {
		klog.FromContext(ctx).Error(err, "Could not cancel requested nodes", "nodeGroup", c.Cancel.Group, "count", n)
	}
}

// SoftTaint takes the DeletionCandidate taint off nodes needed again and
// puts it on unneeded ones, the former first, within one budget of
// --max-bulk-soft-taint-count writes and --max-bulk-soft-taint-time, as
// Cluster Autoscaler does: a burst of nodes changing their minds never
// stalls the loop; the rest wait for the next iterations.
func (a *Live) SoftTaint(ctx context.Context, s SoftTaints) SoftTaintResult {
	budget := scaledown.NewBudget(a.Options.MaxBulkSoftTaintCount, a.Clock.Now(), a.Options.MaxBulkSoftTaintTime)
	res := SoftTaintResult{Failed: map[string]error{}}
	res.Written = a.writeWithin(ctx, budget, s.Remove, "remove", res.Failed, func(name string) error {
		return removeTaint(ctx, a.Client, name, scaledown.DeletionCandidateTaint)
	})
	res.Written += a.writeWithin(ctx, budget, s.Add, "add", res.Failed, func(name string) error {
		return addTaint(ctx, a.Client, name, deletionCandidate(s.Since[name]))
	})
	if res.Left = len(s.Remove) + len(s.Add) - res.Written; res.Left > 0 {
		klog.FromContext(ctx).V(2).Info("Soft-taint budget spent; the other nodes wait for the next iterations", "written", res.Written, "left", res.Left)
	}
	return res
}

// writeWithin writes the deletion candidate taint of nodes while the budget
// lasts, and returns how many it wrote (or tried to).
func (a *Live) writeWithin(ctx context.Context, budget *scaledown.Budget, nodes []string, what string, failed map[string]error, write func(string) error) int {
	n := 0
	for _, name := range nodes {
		if !budget.Take(a.Clock.Now()) {
			break
		}
		n++
		if err := write(name); err != nil {
			failed[name] = err
			klog.FromContext(ctx).Error(err, "Could not "+what+" the deletion candidate taint", "node", name)
		}
	}
	return n
}

// CleanUpTaints takes off the ToBeDeleted taint (and tidal's cordon) of
// nodes that carry it: a drain that was interrupted (tidal killed) left it
// with no owner, so the node is schedulable again. Soft taints stay: their
// value tells the unneeded tracking since when the node is unneeded, and
// the first plan takes them off nodes that are needed.
func (a *Live) CleanUpTaints(ctx context.Context, nodes []*corev1.Node) error {
	var errs []error
	for _, n := range nodes {
		if !markedNode(n) {
			continue
		}
		if _, interrupted := n.Annotations[interrupt.Annotation]; interrupted {
			// The cloud takes it away: the loop drains and deletes it.
			continue
		}
		klog.FromContext(ctx).Info("Removing a deletion taint (and tidal's cordon) no removal owns", "node", n.Name)
		if err := unmarkForRemoval(ctx, a.Client, n.Name); err != nil {
			klog.FromContext(ctx).Error(err, "Could not remove a stale deletion taint", "node", n.Name)
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}
