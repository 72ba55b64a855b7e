package act

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

func (r Removal) empty() bool { return len(r.Pods) == 0 }

// removals are the live actuator's removals in the background: taint,
// drain through the Eviction API (so the API server enforces every PDB),
// delete through the cloud. A removal that fails, or is interrupted by
// shutdown, takes its taint off so the node is schedulable again.
type removals struct {
	mu         sync.Mutex
	inProgress map[string]Removal
	// replacing are the nodes the cloud takes away being drained and
	// deleted (Replace).
	replacing map[string]Replacement
	// replaced are when the replacements that finished did: their nodes
	// count as being removed until the Node objects are gone (the cloud
	// node controller deletes them), for at most replacedMemory.
	replaced    map[string]time.Time
	lastDelete  time.Time
	lastFailure time.Time
	// strayTaints are nodes whose ToBeDeleted taint a failed removal could
	// not take off; the loop tries again every iteration.
	strayTaints map[string]bool
	// evictions are the drains' evictions of the last scaledown.EvictionMemory,
	// oldest first.
	evictions []scaledown.Eviction
	// evictedIn is the namespace of each controller of evictions: the
	// pacing reads only those namespaces' pods.
	evictedIn map[types.UID]string
	// evicting counts the paced evictions asked for and not answered.
	evicting int
	wg       sync.WaitGroup
}

// Remove starts each removal unless one of the node is under way. life
// is the loop's lifetime: when it ends, drains stop and their taints come
// off.
func (a *Live) Remove(life context.Context, rs []Removal) []string {
	var started []string
	for _, r := range rs {
		started = append(started, r.Name)
		a.mu.Lock()
		if _, busy := a.inProgress[r.Name]; busy {
			a.mu.Unlock()
			continue
		}
		a.inProgress[r.Name] = r
		a.mu.Unlock()
		a.wg.Go(func() { a.remove(life, r) })
	}
	return started
}

// Removing is what removals are under way; the replacements of nodes the
// cloud takes away are among Nodes and PerGroup, not All or Drains: they
// spend no scale-down budget.
func (a *Live) Removing() Removing {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := Removing{Nodes: make([]string, 0, len(a.inProgress)), PerGroup: map[string]int{},
		LastDelete: a.lastDelete, LastFailure: a.lastFailure}
	for name, at := range a.replaced {
		if a.Clock.Since(at) > replacedMemory {
			delete(a.replaced, name)
			continue
		}
		out.Nodes = append(out.Nodes, name)
	}
	for name, r := range a.replacing {
		if _, both := a.inProgress[name]; !both {
			out.Nodes = append(out.Nodes, name)
			out.PerGroup[r.Group.Id()]++
		}
	}
	if n := len(a.evictions); n > 0 && a.Clock.Since(a.evictions[0].At) > scaledown.EvictionMemory {
		for len(a.evictions) > 0 && a.Clock.Since(a.evictions[0].At) > scaledown.EvictionMemory {
			a.evictions = a.evictions[1:]
		}
		a.forgetNamespaces()
	}
	out.Evictions = slices.Clone(a.evictions)
	for name, r := range a.inProgress {
		out.Nodes = append(out.Nodes, name)
		out.PerGroup[r.Group.Id()]++
		out.All++
		if !r.empty() {
			out.Drains++
		}
	}
	return out
}

// Wait blocks until every removal has finished or been rolled back.
func (a *Live) Wait() { a.wg.Wait() }

func (a *Live) remove(ctx context.Context, r Removal) {
	logger := klog.FromContext(ctx).WithValues("node", r.Name, "nodeGroup", r.Group.Id())
	start := a.Clock.Now()
	err := a.removeSteps(ctx, r)
	a.mu.Lock()
	delete(a.inProgress, r.Name)
	if err != nil {
		a.lastFailure = a.Clock.Now()
	} else {
		a.lastDelete = a.Clock.Now()
		delete(a.strayTaints, r.Name)
	}
	a.mu.Unlock()
	if err != nil {
		logger.Error(err, "Scale-down of node failed; it stays, schedulable again")
		a.Metrics.FailedScaleDowns.WithLabelValues(r.Group.Id()).Inc()
		a.Events.OnNode(r.Node, corev1.EventTypeWarning, "ScaleDownFailed", "failed to remove node: %v", err)
		return
	}
	logger.Info("Node removed", "kind", r.Kind, "evicted", len(r.Pods), "took", a.Clock.Since(start).Round(time.Millisecond))
	a.Metrics.ScaledDown(r.Group.Id(), r.Kind)
	a.Metrics.Activity("scaleDown", a.Clock.Now())
	a.Events.OnNode(r.Node, corev1.EventTypeNormal, "ScaleDown", "node removed by tidal (%s)", r.Kind)
	reason := "ScaleDown"
	if r.empty() {
		reason = "ScaleDownEmpty"
	}
	a.Events.OnStatus(a.Status, corev1.EventTypeNormal, reason, "removed %s node %s of node group %s", r.Kind, r.Name, r.Group.Id())
}

// removeSteps taints, drains and deletes; on failure it untaints. A taint
// whose request failed may still have been written, so it is taken off
// then too; a taint that cannot be taken off is left to the loop.
func (a *Live) removeSteps(ctx context.Context, r Removal) error {
	err := markForRemoval(ctx, a.Client, r.Name, a.Clock.Now(), a.Options.CordonNodeBeforeTerminating)
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
	if uerr := unmarkForRemoval(untaintCtx, a.Client, r.Name); uerr != nil {
		a.mu.Lock()
		a.strayTaints[r.Name] = true
		a.mu.Unlock()
		err = errors.Join(err, fmt.Errorf("remove taint (tried again every iteration): %w", uerr))
	}
	return err
}

// Begin takes off the ToBeDeleted taints failed removals left, and
// forgets those taken off (or whose node is gone).
func (a *Live) Begin(ctx context.Context) {
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
		if err := unmarkForRemoval(ctx, a.Client, n); err != nil {
			klog.FromContext(ctx).Error(err, "Could not remove the taint of a failed removal; trying again next iteration", "node", n)
			continue
		}
		a.mu.Lock()
		delete(a.strayTaints, n)
		a.mu.Unlock()
	}
}
