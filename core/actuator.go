package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// removal is a node being removed.
type removal struct {
	node      *corev1.Node
	group     cloudprovider.NodeGroup
	pods      []*corev1.Pod
	daemonSet []*corev1.Pod
	// kind is empty, underutilized or unready (the metric's reason).
	kind string
}

func (r removal) empty() bool { return len(r.pods) == 0 }

// actuator removes nodes in the background: taint, drain through the
// Eviction API (so the API server enforces every PDB), delete through the
// cloud. A removal that fails, or is interrupted by shutdown, takes its
// taint off so the node is schedulable again.
type actuator struct {
	actuatorDeps

	mu          sync.Mutex
	inProgress  map[string]removal
	lastDelete  time.Time
	lastFailure time.Time
	// strayTaints are nodes whose ToBeDeleted taint a failed removal could
	// not take off; the loop tries again every iteration.
	strayTaints map[string]bool
	wg          sync.WaitGroup
}

// actuatorDeps is what the actuator works with.
type actuatorDeps struct {
	client kubernetes.Interface
	// pods is the pod informer's lister: drains read from it whether
	// their evicted pods are gone; podsSynced tells whether it has synced.
	pods       corelisters.PodLister
	podsSynced func() bool
	events     *telemetry.Events
	status     *statusWriter
	clock      clock.Clock
	opts       config.ScaleDownOptions
	metrics    *Metrics
}

func newActuator(d actuatorDeps) *actuator {
	return &actuator{actuatorDeps: d, inProgress: map[string]removal{}, strayTaints: map[string]bool{}}
}

// start begins a removal unless one of the node is under way. ctx is the
// loop's lifetime: when it ends, drains stop and their taints come off.
func (a *actuator) start(ctx context.Context, r removal) {
	a.mu.Lock()
	if _, busy := a.inProgress[r.node.Name]; busy {
		a.mu.Unlock()
		return
	}
	a.inProgress[r.node.Name] = r
	a.mu.Unlock()
	a.wg.Go(func() { a.remove(ctx, r) })
}

// counts returns removals in progress: all, and the non-empty ones.
func (a *actuator) counts() (all, drains int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.inProgress {
		all++
		if !r.empty() {
			drains++
		}
	}
	return all, drains
}

// deleting lists nodes being removed, and per group how many.
func (a *actuator) deleting() ([]string, map[string]int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]string, 0, len(a.inProgress))
	perGroup := map[string]int{}
	for name, r := range a.inProgress {
		names = append(names, name)
		perGroup[r.group.Id()]++
	}
	return names, perGroup
}

func (a *actuator) times() (lastDelete, lastFailure time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastDelete, a.lastFailure
}

// wait blocks until every removal has finished or been rolled back.
func (a *actuator) wait() { a.wg.Wait() }

func (a *actuator) remove(ctx context.Context, r removal) {
	logger := klog.FromContext(ctx).WithValues("node", r.node.Name, "nodeGroup", r.group.Id())
	start := a.clock.Now()
	err := a.removeSteps(ctx, r)
	a.mu.Lock()
	delete(a.inProgress, r.node.Name)
	if err != nil {
		a.lastFailure = a.clock.Now()
	} else {
		a.lastDelete = a.clock.Now()
		delete(a.strayTaints, r.node.Name)
	}
	a.mu.Unlock()
	if err != nil {
		logger.Error(err, "Scale-down of node failed; it stays, schedulable again")
		a.metrics.FailedScaleDowns.WithLabelValues(r.group.Id()).Inc()
		a.events.OnNode(r.node, corev1.EventTypeWarning, "ScaleDownFailed", "failed to remove node: %v", err)
		return
	}
	logger.Info("Node removed", "kind", r.kind, "evicted", len(r.pods), "took", a.clock.Since(start).Round(time.Millisecond))
	a.metrics.ScaledDown(r.group.Id(), r.kind)
	a.metrics.Activity("scaleDown", a.clock.Now())
	a.events.OnNode(r.node, corev1.EventTypeNormal, "ScaleDown", "node removed by tidal (%s)", r.kind)
	reason := "ScaleDown"
	if r.empty() {
		reason = "ScaleDownEmpty"
	}
	a.events.OnStatus(a.status, corev1.EventTypeNormal, reason, "removed %s node %s of node group %s", r.kind, r.node.Name, r.group.Id())
}

// removeSteps taints, drains and deletes; on failure it untaints. A taint
// whose request failed may still have been written, so it is taken off
// then too; a taint that cannot be taken off is left to the loop.
func (a *actuator) removeSteps(ctx context.Context, r removal) error {
	err := markForRemoval(ctx, a.client, r.node.Name, a.clock.Now(), a.opts.CordonNodeBeforeTerminating)
	if err != nil {
		err = fmt.Errorf("taint %s: %w", scaledown.ToBeDeletedTaint, err)
	} else {
		err = a.drainAndDelete(ctx, r)
	}
	if err == nil {
		return nil
	}
	untaintCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if uerr := unmarkForRemoval(untaintCtx, a.client, r.node.Name); uerr != nil {
		a.mu.Lock()
		a.strayTaints[r.node.Name] = true
		a.mu.Unlock()
		err = errors.Join(err, fmt.Errorf("remove taint (tried again every iteration): %w", uerr))
	}
	return err
}

// untaintStrays takes off the ToBeDeleted taints failed removals left, and
// forgets those taken off (or whose node is gone).
func (a *actuator) untaintStrays(ctx context.Context) {
	a.mu.Lock()
	var nodes []string
	for n := range a.strayTaints {
		if _, busy := a.inProgress[n]; !busy {
			nodes = append(nodes, n)
		}
	}
	a.mu.Unlock()
	slices.Sort(nodes)
	for _, n := range nodes {
		if err := unmarkForRemoval(ctx, a.client, n); err != nil {
			klog.FromContext(ctx).Error(err, "Could not remove the taint of a failed removal; trying again next iteration", "node", n)
			continue
		}
		a.mu.Lock()
		delete(a.strayTaints, n)
		a.mu.Unlock()
	}
}
