package act

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// pacePollInterval is how often a paced drain looks whether an evicted
// pod's replacement was bound.
const pacePollInterval = 200 * time.Millisecond

// errPaceTimeout is a drain that waited --pending-evicted-pods-timeout
// for its next eviction: it is abandoned.
var errPaceTimeout = errors.New("evicted pods waited for a node for too long")

// how is how one pod is evicted.
type how struct {
	// deadline is until when a refused eviction is tried again (retry),
	// or until stop is closed (nil: never).
	deadline time.Time
	retry    bool
	stop     <-chan struct{}
	// paced waits for room to evict (scaledown.Pacing); record notes a
	// successful eviction, by the pod's controller, for the hold on the
	// pods drains moved and for the pacing.
	paced, record bool
}

// slot waits until the pacing lets one more pod be evicted and takes that
// room (an eviction under way counts until settle), or fails once it has
// waited --pending-evicted-pods-timeout with no pod evicted meanwhile.
func (a *Live) slot(ctx context.Context, p *corev1.Pod) error {
	pacing := a.Options.Pacing
	start := a.Clock.Now()
	for {
		a.mu.Lock()
		namespaces := slices.Sorted(maps.Values(a.evictedIn))
		a.mu.Unlock()
		pods, err := a.podsIn(namespaces)
		if err != nil {
			return fmt.Errorf("read pods to pace the drain: %w", err)
		}
		a.mu.Lock()
		now := a.Clock.Now()
		waiting := scaledown.Unplaced(a.evictions, pods, now.Add(-pacing.Timeout), now) + a.evicting
		from := start
		if n := len(a.evictions); n > 0 && a.evictions[n-1].At.After(from) {
			from = a.evictions[n-1].At
		}
		step := pacing.Next(waiting, now.Sub(from))
		if step == scaledown.PaceEvict {
			a.evicting++
		}
		a.mu.Unlock()
		switch step {
		case scaledown.PaceEvict:
			return nil
		case scaledown.PaceGiveUp:
			return fmt.Errorf("pod %s/%s not evicted: %d evicted pod(s) still without a node after %v: %w",
				p.Namespace, p.Name, waiting, pacing.Timeout, errPaceTimeout)
		}
		klog.FromContext(ctx).V(4).Info("Eviction waits for evicted pods to be bound", "pod", klog.KObj(p), "waiting", waiting)
		select {
		case <-ctx.Done():
			return fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, ctx.Err())
		case <-a.Clock.After(pacePollInterval):
		}
	}
}

// settle ends an eviction: it gives back the room slot took (paced) and
// notes the eviction at at when the API server accepted it and h records
// it, in the same step, so the next drain's slot sees it. A pod found
// gone was not moved by the drain: its replacement, if any, was created
// before.
func (a *Live) settle(p *corev1.Pod, h how, accepted bool, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h.paced {
		a.evicting--
	}
	if !h.record || !accepted {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		a.evictions = append(a.evictions, scaledown.Eviction{Controller: ref.UID, At: at})
		if a.evictedIn == nil {
			a.evictedIn = map[types.UID]string{}
		}
		a.evictedIn[ref.UID] = p.Namespace
	}
}

// podsIn lists the pods of the namespaces (sorted, possibly repeated) from
// the informer: a paced drain's replacements are in its evicted pods'
// namespaces, and listing every pod of a big cluster at each look would
// cost in proportion to the cluster.
func (a *Live) podsIn(namespaces []string) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for i, ns := range namespaces {
		if i > 0 && ns == namespaces[i-1] {
			continue
		}
		in, err := a.Pods.Pods(ns).List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("list pods of namespace %s: %w", ns, err)
		}
		pods = append(pods, in...)
	}
	return pods, nil
}

// forgetNamespaces drops the namespaces of controllers no eviction
// remembers any more; a.mu is held.
func (a *removals) forgetNamespaces() {
	kept := map[types.UID]bool{}
	for _, e := range a.evictions {
		kept[e.Controller] = true
	}
	maps.DeleteFunc(a.evictedIn, func(uid types.UID, _ string) bool { return !kept[uid] })
}
