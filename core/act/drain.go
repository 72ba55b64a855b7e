package act

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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// EvictionRetryInterval is how long an eviction that a PodDisruptionBudget
// refused (429) waits before it is tried again, until --max-pod-eviction-time
// passes; kubectl drain waits the same 5 s.
const EvictionRetryInterval = 5 * time.Second

// podGonePollInterval is how often a drain looks whether its evicted pods
// are gone.
const podGonePollInterval = time.Second

// daemonSetEviction is which removals evict DaemonSet pods, best-effort,
// before the node goes (--daemonset-eviction-for-occupied-nodes,
// --daemonset-eviction-for-empty-nodes).
func daemonSetEviction(o Options) scaledown.DaemonSetEviction {
	return scaledown.DaemonSetEviction{OccupiedNodes: o.DaemonSetEvictionForOccupiedNodes, EmptyNodes: o.DaemonSetEvictionForEmptyNodes}
}

// drainAndDelete runs a removal once its node is tainted: it waits
// --node-delete-delay-after-taint, so the scheduler has seen the taint,
// then reads the node's pods from the API server and gives up if one is
// there the plan did not know (bound between the plan and the taint).
// A node with pods to move is drained and read once more before it goes.
func (a *Live) drainAndDelete(ctx context.Context, r Removal) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting after the taint: %w", ctx.Err())
	case <-a.Clock.After(a.Options.NodeDeleteDelayAfterTaint):
	}
	if err := a.checkPods(ctx, r); err != nil {
		return err
	}
	if !r.empty() {
		if err := a.drain(ctx, r, a.Clock.Now().Add(a.Options.MaxPodEvictionTime)); err != nil {
			return err
		}
		if err := a.checkPods(ctx, r); err != nil {
			return err
		}
	}
	a.evictDaemonSetPods(ctx, r)
	// A provider that hangs and ignores ctx still lets the removal end
	// (and its taint come off) when the loop stops.
	if err := bounded(ctx, "delete nodes", func(ctx context.Context) error { return r.Group.DeleteNodes(ctx, []*corev1.Node{r.Node}) }); err != nil {
		return fmt.Errorf("cloud provider: %w", err)
	}
	return nil
}

// checkPods lists the node's pods from the API server (not the informer,
// which may be behind) and fails when one is there that the removal did not
// plan to move.
func (a *Live) checkPods(ctx context.Context, r Removal) error {
	sel := fields.OneTermEqualSelector("spec.nodeName", r.Name).String()
	list, err := a.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return fmt.Errorf("read the node's pods again: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	if u := scaledown.Unexpected(pods, r.Pods, a.Clock.Now()); len(u) > 0 {
		return fmt.Errorf("%d pod(s) the removal did not plan for are on the node, e.g. %s/%s", len(u), u[0].Namespace, u[0].Name)
	}
	return a.checkNominated(ctx, r.Name)
}

// checkNominated lists from the API server the pods nominated to the node
// and fails when one of them is pending: the scheduler would bind it
// there, and deleting the node would leave it waiting.
func (a *Live) checkNominated(ctx context.Context, node string) error {
	sel := fields.OneTermEqualSelector("status.nominatedNodeName", node).String()
	list, err := a.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return fmt.Errorf("read the pods nominated to the node: %w", err)
	}
	for _, p := range list.Items {
		if p.Status.NominatedNodeName == node && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			return fmt.Errorf("pod %s/%s is nominated to the node and not yet bound", p.Namespace, p.Name)
		}
	}
	return nil
}

// drain evicts the pods, retrying evictions a PDB refuses until deadline
// (--max-pod-eviction-time from now, for a scale-down), then waits for
// them to be gone.
func (a *Live) drain(ctx context.Context, r Removal, deadline time.Time) error {
	evicted, errs := a.evictAll(ctx, r.Pods, how{deadline: deadline, retry: true, paced: true, record: true})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return a.waitGone(ctx, evicted)
}

// evictAll evicts the pods side by side, as h says: what each eviction
// returned, in the pods' order. A paced drain evicts at most as many at
// once as the pacing lets pods wait for a node (the others would only
// wait), and once it has waited too long for its next eviction it evicts
// no more.
func (a *Live) evictAll(ctx context.Context, pods []*corev1.Pod, h how) ([]scaledown.Evicted, []error) {
	h.paced = h.paced && a.Options.Pacing.Limit > 0
	evicted := make([]scaledown.Evicted, len(pods))
	errs := make([]error, len(pods))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	side := len(pods)
	if h.paced {
		side = a.Options.Pacing.Limit
	}
	turns := make(chan struct{}, max(side, 1))
	var wg sync.WaitGroup
	for i, p := range pods {
		evicted[i].Pod = p
		select {
		case turns <- struct{}{}:
		case <-ctx.Done():
			errs[i] = fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, context.Cause(ctx))
			continue
		}
		wg.Go(func() {
			defer func() { <-turns }()
			evicted[i].At, errs[i] = a.evict(ctx, p, h)
			if errors.Is(errs[i], errPaceTimeout) {
				cancel(errs[i])
			}
		})
	}
	wg.Wait()
	return evicted, errs
}

// evict asks the API server to evict p, retrying refusals until
// h.deadline when h.retry is set, or until h.stop is closed (nil: never),
// each try paced when h.paced. It returns when the eviction was accepted.
func (a *Live) evict(ctx context.Context, p *corev1.Pod, h how) (time.Time, error) {
	grace := int64(a.Options.MaxGracefulTerminationSec)
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g < grace {
		grace = *g
	}
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	for {
		if h.paced {
			if err := a.slot(ctx, p); err != nil {
				return time.Time{}, err
			}
		}
		at, accepted, err := a.evictOnce(ctx, p, ev)
		a.settle(p, h, accepted, at)
		if err == nil {
			return at, nil
		}
		a.Metrics.Evicted("retried")
		if !h.retry || !a.Clock.Now().Before(h.deadline) {
			a.Metrics.Evicted("failed")
			return time.Time{}, fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, ctx.Err())
		case <-h.stop:
			a.Metrics.Evicted("failed")
			return time.Time{}, fmt.Errorf("evict pod %s/%s: the node's deadline came: %w", p.Namespace, p.Name, err)
		case <-a.Clock.After(EvictionRetryInterval):
		}
	}
}

// evictOnce asks for the eviction once: when the pod was evicted or found
// gone, whether this eviction was accepted (not found gone), or the API
// server's refusal.
func (a *Live) evictOnce(ctx context.Context, p *corev1.Pod, ev *policyv1.Eviction) (time.Time, bool, error) {
	err := a.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		a.Metrics.Evicted("succeeded")
		a.Events.OnPod(p, corev1.EventTypeNormal, "ScaleDown", "deleting pod for node scale down")
		return a.Clock.Now(), true, nil
	case apierrors.IsNotFound(err):
		// Gone already: the wait that follows confirms it.
		return a.Clock.Now(), false, nil
	case apierrors.IsConflict(err) && a.presence(ctx, p, a.PodsSynced()) == scaledown.PresenceGone:
		// The UID precondition failed because the pod was replaced by
		// another of its name. Any other conflict is no eviction: the
		// pod is still there, and it is tried again like any error.
		return a.Clock.Now(), false, nil
	}
	return time.Time{}, false, err
}

// waitGone waits, looking every podGonePollInterval, until each evicted pod
// is gone or has had --max-graceful-termination-sec (plus headroom) since
// its eviction. Only a pod known gone counts as gone: see presence.
func (a *Live) waitGone(ctx context.Context, evicted []scaledown.Evicted) error {
	left := evicted
	for {
		left = a.notGone(ctx, left)
		waiting, overdue := scaledown.Overdue(left, a.Clock.Now(), time.Duration(a.Options.MaxGracefulTerminationSec)*time.Second)
		if len(waiting) == 0 {
			if len(overdue) > 0 {
				klog.FromContext(ctx).Info("Evicted pods not known gone after the longest grace period; the node goes anyway",
					"pods", len(overdue), "example", klog.KObj(overdue[0].Pod))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			p := waiting[0].Pod
			return fmt.Errorf("%d evicted pod(s) not known gone, e.g. %s/%s: %w", len(waiting), p.Namespace, p.Name, ctx.Err())
		case <-a.Clock.After(podGonePollInterval):
		}
	}
}

// notGone keeps the pods not known to be gone.
func (a *Live) notGone(ctx context.Context, pods []scaledown.Evicted) []scaledown.Evicted {
	synced := a.PodsSynced()
	var out []scaledown.Evicted
	for _, e := range pods {
		if a.presence(ctx, e.Pod, synced) != scaledown.PresenceGone {
			out = append(out, e)
		}
	}
	return out
}

// presence reads an evicted pod from the pod informer; a pod the informer
// no longer has is confirmed by one GET, and any error but NotFound leaves
// it unknown.
func (a *Live) presence(ctx context.Context, p *corev1.Pod, synced bool) scaledown.Presence {
	cached, err := a.Pods.Pods(p.Namespace).Get(p.Name)
	if err != nil {
		cached = nil
	}
	state, confirm := scaledown.FromCache(p.UID, cached, synced)
	if !confirm {
		return state
	}
	got, err := a.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	state = scaledown.FromAPI(p.UID, got, err)
	if state == scaledown.PresenceUnknown {
		klog.FromContext(ctx).V(2).Info("Evicted pod not confirmed gone; waiting", "pod", klog.KObj(p), "err", err)
	}
	return state
}

// evictDaemonSetPods evicts DaemonSet pods once each, without waiting.
func (a *Live) evictDaemonSetPods(ctx context.Context, r Removal) {
	for _, p := range r.DaemonSet {
		if !daemonSetEviction(a.Options).Evicts(p, r.empty()) {
			continue
		}
		if _, err := a.evict(ctx, p, how{}); err != nil {
			klog.FromContext(ctx).V(2).Info("DaemonSet pod not evicted; the node goes anyway", "pod", klog.KObj(p), "err", err)
		}
	}
}
