package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
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
	client  kubernetes.Interface
	events  *eventDeduper
	status  *statusWriter
	clock   clock.Clock
	opts    ScaleDownOptions
	metrics *Metrics

	mu          sync.Mutex
	inProgress  map[string]removal
	lastDelete  time.Time
	lastFailure time.Time
	wg          sync.WaitGroup
}

func newActuator(client kubernetes.Interface, events *eventDeduper, status *statusWriter, c clock.Clock, opts ScaleDownOptions, m *Metrics) *actuator {
	return &actuator{client: client, events: events, status: status, clock: c, opts: opts, metrics: m, inProgress: map[string]removal{}}
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
	}
	a.mu.Unlock()
	if err != nil {
		logger.Error(err, "Scale-down of node failed; it stays, schedulable again")
		a.metrics.FailedScaleDowns.WithLabelValues(r.group.Id()).Inc()
		a.events.onNode(r.node, corev1.EventTypeWarning, "ScaleDownFailed", "failed to remove node: %v", err)
		return
	}
	logger.Info("Node removed", "kind", r.kind, "evicted", len(r.pods), "took", a.clock.Since(start).Round(time.Millisecond))
	a.metrics.ScaledDownNodes.WithLabelValues(r.group.Id(), r.kind).Inc()
	a.metrics.LastActivity.WithLabelValues("scaleDown").Set(float64(a.clock.Now().Unix()))
	a.events.onNode(r.node, corev1.EventTypeNormal, "ScaleDown", "node removed by tidal (%s)", r.kind)
	reason := "ScaleDown"
	if r.empty() {
		reason = "ScaleDownEmpty"
	}
	a.events.onStatus(a.status, corev1.EventTypeNormal, reason, "removed %s node %s of node group %s", r.kind, r.node.Name, r.group.Id())
}

// removeSteps taints, drains and deletes; on failure it untaints.
func (a *actuator) removeSteps(ctx context.Context, r removal) error {
	if err := addTaint(ctx, a.client, r.node.Name, toBeDeleted(a.clock.Now())); err != nil {
		return fmt.Errorf("taint %s: %w", scaledown.ToBeDeletedTaint, err)
	}
	err := a.drain(ctx, r)
	if err == nil {
		if a.opts.EvictDaemonSetPods && !r.empty() {
			a.evictDaemonSetPods(ctx, r)
		}
		if err = r.group.DeleteNodes([]*corev1.Node{r.node}); err != nil {
			err = fmt.Errorf("cloud provider: %w", err)
		}
	}
	if err != nil {
		untaintCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if uerr := removeTaint(untaintCtx, a.client, r.node.Name, scaledown.ToBeDeletedTaint); uerr != nil {
			err = errors.Join(err, fmt.Errorf("remove taint: %w", uerr))
		}
	}
	return err
}

// drain evicts the pods, retrying evictions a PDB refuses until
// --max-pod-eviction-time, then waits for them to be gone.
func (a *actuator) drain(ctx context.Context, r removal) error {
	if r.empty() {
		return nil
	}
	deadline := a.clock.Now().Add(a.opts.MaxPodEvictionTime)
	errs := make([]error, len(r.pods))
	var wg sync.WaitGroup
	for i, p := range r.pods {
		wg.Go(func() { errs[i] = a.evict(ctx, p, deadline, true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return a.waitGone(ctx, r.pods)
}

// evict asks the API server to evict p, retrying refusals until deadline
// when retry is set.
func (a *actuator) evict(ctx context.Context, p *corev1.Pod, deadline time.Time, retry bool) error {
	grace := int64(a.opts.MaxGracefulTermination.Seconds())
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g < grace {
		grace = *g
	}
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	for {
		err := a.client.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		switch {
		case err == nil:
			a.metrics.EvictedPods.WithLabelValues("succeeded").Inc()
			a.events.onPod(p, corev1.EventTypeNormal, "ScaleDown", "deleting pod for node scale down")
			return nil
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already, or replaced by another pod of that name.
			return nil
		}
		a.metrics.EvictedPods.WithLabelValues("retried").Inc()
		if !retry || !a.clock.Now().Before(deadline) {
			a.metrics.EvictedPods.WithLabelValues("failed").Inc()
			return fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, ctx.Err())
		case <-a.clock.After(a.opts.EvictionRetryInterval):
		}
	}
}

// waitGone waits until every pod is deleted (or replaced by a new pod of
// the same name), for the longest grace period plus a margin.
func (a *actuator) waitGone(ctx context.Context, pods []*corev1.Pod) error {
	longest := time.Duration(0)
	for _, p := range pods {
		g := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
		if p.Spec.TerminationGracePeriodSeconds != nil {
			g = time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
		}
		longest = max(longest, min(g, a.opts.MaxGracefulTermination))
	}
	waitCtx, cancel := context.WithTimeout(ctx, longest+30*time.Second)
	defer cancel()
	left := pods
	err := wait.PollUntilContextCancel(waitCtx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var still []*corev1.Pod
		for _, p := range left {
			cur, err := a.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err == nil && cur.UID == p.UID {
				still = append(still, p)
			}
		}
		left = still
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d evicted pod(s) still there, e.g. %s/%s: %w", len(left), left[0].Namespace, left[0].Name, err)
	}
	return nil
}

// evictDaemonSetPods evicts DaemonSet pods once each, without waiting.
func (a *actuator) evictDaemonSetPods(ctx context.Context, r removal) {
	for _, p := range r.daemonSet {
		if err := a.evict(ctx, p, time.Time{}, false); err != nil {
			klog.FromContext(ctx).V(2).Info("DaemonSet pod not evicted; the node goes anyway", "pod", klog.KObj(p), "err", err)
		}
	}
}
