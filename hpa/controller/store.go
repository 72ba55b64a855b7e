package controller

import (
	"context"
	"slices"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// Autoscaler is one autoscaler as a sync sees it, whatever its API kind.
// Spec and Status share memory with the informer cache: never modify them.
type Autoscaler struct {
	Key        string
	Namespace  string
	Name       string
	Generation int64
	// Ref is the object events are recorded on.
	Ref *corev1.ObjectReference
	// Spec is the autoscaling/v2 spec as stored (not defaulted).
	Spec autoscalingv2.HorizontalPodAutoscalerSpec
	// Watermarks is index-aligned with Spec.Metrics (nil: none).
	Watermarks []*hpa.Watermarks
	// SpecErr is a spec error the API server's validation did not catch,
	// and SpecReason its reason (EventInvalidWatermarks,
	// EventInvalidQuantity): the autoscaler is then not scaled.
	SpecErr    error
	SpecReason string
	// Status is the current status.
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	// History is the persisted stabilization and scale-event history.
	History hpa.History
	// Activation is index-aligned with Spec.Metrics: the activation
	// thresholds (nil: none).
	Activation []*resource.Quantity
	// Schedules are the parsed scheduled minimums; ScheduleErrs the
	// entries that did not parse (they are ignored).
	Schedules    []hpa.ScheduledMinimum
	ScheduleErrs []error
	// ScaleToZero allows scaling to zero with spec.minReplicas 0
	// (PodAutoscalers only).
	ScaleToZero bool

	// object is the store's version of the object, for WriteStatus.
	object runtime.Object
}

// Store reads autoscalers of one API kind and writes their status. The
// implementations are PodAutoscalerStore and HPAStore.
type Store interface {
	// Informer is the informer whose events drive the work queue.
	Informer() cache.SharedIndexInformer
	// Get returns the newest known version of an autoscaler ("namespace/name"),
	// or nil when it no longer exists.
	Get(key string) (*Autoscaler, error)
	// WriteStatus stores status and history in the autoscaler when they
	// differ from what it holds, and reports whether it wrote.
	WriteStatus(ctx context.Context, a *Autoscaler, status autoscalingv2.HorizontalPodAutoscalerStatus, history hpa.History) (bool, error)
	// SpecChanged reports whether an informer update changed what the
	// calculation reads (not the status).
	SpecChanged(old, cur any) bool
}

// writeMemo bridges the moment between a status write and the informer
// seeing it: until the cache has moved past the versions a write replaced,
// Get serves the object the write returned, so that a quick re-sync does
// not work from a history without the last recommendation.
type writeMemo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	// replaced are the resource versions the write made stale.
	replaced []string
	written  runtime.Object
}

// newest returns the written object while the cache still holds a version
// it replaced, else cached.
func (w *writeMemo) newest(key string, cached runtime.Object) runtime.Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok {
		return cached
	}
	if cached != nil {
		if m, err := meta.Accessor(cached); err == nil && m.GetResourceVersion() != "" && slices.Contains(e.replaced, m.GetResourceVersion()) {
			return e.written
		}
	}
	delete(w.m, key)
	return cached
}

// remember records a successful write.
func (w *writeMemo) remember(key string, replaced []string, written runtime.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]memoEntry{}
	}
	w.m[key] = memoEntry{replaced: replaced, written: written}
}

// getCached reads a key from an informer's cache.
func getCached(inf cache.SharedIndexInformer, key string) (runtime.Object, error) {
	obj, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, err
	}
	return obj.(runtime.Object), nil
}

// historyOrNil returns nil for an empty history (nothing to persist).
func historyOrNil(h hpa.History) *hpa.History {
	if len(h.Recommendations) == 0 && len(h.ScaleUpEvents) == 0 && len(h.ScaleDownEvents) == 0 {
		return nil
	}
	return &h
}
