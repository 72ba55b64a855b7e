package controller

import (
	"context"
	"encoding/json"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
)

// Annotations tidal reads and writes on autoscaling/v2
// HorizontalPodAutoscalers, which have no place for its additions.
const (
	// HistoryAnnotation holds the JSON hpa.History tidal persists.
	HistoryAnnotation = v1alpha1.GroupName + "/history"
	// WatermarksAnnotation holds a JSON list of watermarks index-aligned
	// with spec.metrics (null for a metric without), e.g.
	// [{"high":"80","low":"40"},null].
	WatermarksAnnotation = v1alpha1.GroupName + "/watermarks"
)

// HPAClient is what HPAStore writes through.
type HPAClient interface {
	Get(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error)
	UpdateStatus(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error)
	PatchAnnotation(ctx context.Context, namespace, name, key, value string) (*autoscalingv2.HorizontalPodAutoscaler, error)
}

// HPAStore keeps autoscaling/v2 HorizontalPodAutoscalers (--hpa-objects):
// the watermarks and the history live in annotations.
type HPAStore struct {
	informer cache.SharedIndexInformer
	client   HPAClient
	memo     writeMemo
}

// NewHPAStore returns a store over an informer of HorizontalPodAutoscalers.
func NewHPAStore(informer cache.SharedIndexInformer, client HPAClient) *HPAStore {
	return &HPAStore{informer: informer, client: client}
}

// HPAClientFor adapts a clientset.
func HPAClientFor(c kubernetes.Interface) HPAClient { return hpaClient{c} }

type hpaClient struct{ c kubernetes.Interface }

func (h hpaClient) Get(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return h.c.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (h hpaClient) UpdateStatus(ctx context.Context, o *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return h.c.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).UpdateStatus(ctx, o, metav1.UpdateOptions{})
}

func (h hpaClient) PatchAnnotation(ctx context.Context, namespace, name, key, value string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	var v any = value
	if value == "" {
		v = nil // a merge patch removes a key set to null
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return nil, err
	}
	return h.c.AutoscalingV2().HorizontalPodAutoscalers(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// Informer implements Store.
func (s *HPAStore) Informer() cache.SharedIndexInformer { return s.informer }

// Get implements Store. An unreadable history annotation is ignored (the
// history starts afresh, as upstream's does on every restart); unreadable
// watermarks are a spec error.
func (s *HPAStore) Get(key string) (*Autoscaler, error) {
	cached, err := getCached(s.informer, key)
	if err != nil {
		return nil, err
	}
	obj := s.memo.newest(key, cached)
	if obj == nil {
		return nil, nil
	}
	h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	a := &Autoscaler{
		Key: key, Namespace: h.Namespace, Name: h.Name, Generation: h.Generation,
		Ref: &corev1.ObjectReference{
			APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler",
			Namespace: h.Namespace, Name: h.Name, UID: h.UID, ResourceVersion: h.ResourceVersion,
		},
		Spec: h.Spec, Status: h.Status, object: h,
	}
	if raw := h.Annotations[HistoryAnnotation]; raw != "" {
		if json.Unmarshal([]byte(raw), &a.History) != nil {
			a.History = hpa.History{} // not half of it: start anew, as after a restart
		}
	}
	if a.Watermarks, a.SpecErr = parseWatermarks(h.Annotations[WatermarksAnnotation], len(h.Spec.Metrics)); a.SpecErr != nil {
		a.SpecReason = EventInvalidWatermarks
	}
	return a, nil
}

// parseWatermarks reads the watermarks annotation, refusing what the
// PodAutoscaler CRD refuses in a PodAutoscaler's watermarks, with the same
// messages (the quantities' strings checked before they are parsed).
func parseWatermarks(raw string, metrics int) ([]*hpa.Watermarks, error) {
	if raw == "" {
		return nil, nil
	}
	var marks []*v1alpha1.Watermarks
	var list *field.Path // the entries' paths are [0], [1], ...
	errs, err := v1alpha1.UnmarshalChecked([]byte(raw), &marks, list)
	switch {
	case err != nil:
		return nil, fmt.Errorf("annotation %s: %w", WatermarksAnnotation, err)
	case len(errs) > 0:
		return nil, fmt.Errorf("annotation %s: %w", WatermarksAnnotation, errs.ToAggregate())
	case len(marks) > metrics:
		return nil, fmt.Errorf("annotation %s lists %d entries for %d metrics", WatermarksAnnotation, len(marks), metrics)
	}
	out := make([]*hpa.Watermarks, len(marks))
	for i, w := range marks {
		if w != nil {
			hw := hpa.Watermarks(*w)
			out[i] = &hw
			errs = append(errs, hw.Validate(list.Index(i))...)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("annotation %s: %w", WatermarksAnnotation, errs.ToAggregate())
	}
	return out, nil
}

// encodeHistory is the history annotation's value ("" for no history).
func encodeHistory(h hpa.History) (string, error) {
	if historyOrNil(h) == nil {
		return "", nil
	}
	b, err := json.Marshal(h)
	return string(b), err
}

// WriteStatus implements Store. The status and the history annotation go in
// one status update: the HorizontalPodAutoscaler status strategy keeps
// metadata changes. Should an API server drop the annotation, it is
// patched on the object instead.
func (s *HPAStore) WriteStatus(ctx context.Context, a *Autoscaler, status autoscalingv2.HorizontalPodAutoscalerStatus, history hpa.History) (bool, error) {
	h := a.object.(*autoscalingv2.HorizontalPodAutoscaler)
	wantHistory, err := encodeHistory(history)
	if err != nil {
		return false, err
	}
	if equality.Semantic.DeepEqual(h.Status, status) && h.Annotations[HistoryAnnotation] == wantHistory {
		return false, nil
	}
	next := h.DeepCopy()
	replaced := []string{h.ResourceVersion}
	for attempt := 0; ; attempt++ {
		next.Status = status
		setAnnotation(next, HistoryAnnotation, wantHistory)
		written, err := s.client.UpdateStatus(ctx, next)
		if err == nil {
			if written.Annotations[HistoryAnnotation] != wantHistory {
				if written, err = s.client.PatchAnnotation(ctx, h.Namespace, h.Name, HistoryAnnotation, wantHistory); err != nil {
					return true, fmt.Errorf("write history of HorizontalPodAutoscaler %s: %w", a.Key, err)
				}
			}
			s.memo.remember(a.Key, replaced, written)
			return true, nil
		}
		if !apierrors.IsConflict(err) || attempt == 4 {
			return false, fmt.Errorf("update status of HorizontalPodAutoscaler %s: %w", a.Key, err)
		}
		fresh, gerr := s.client.Get(ctx, h.Namespace, h.Name)
		if gerr != nil {
			return false, fmt.Errorf("update status of HorizontalPodAutoscaler %s: %w (and reading it again: %v)", a.Key, err, gerr)
		}
		next = fresh
		replaced = append(replaced, fresh.ResourceVersion)
	}
}

// setAnnotation sets or, for "", removes an annotation.
func setAnnotation(h *autoscalingv2.HorizontalPodAutoscaler, key, value string) {
	if value == "" {
		delete(h.Annotations, key)
		return
	}
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[key] = value
}

// SpecChanged implements Store: a HorizontalPodAutoscaler's generation does
// not follow its spec, so the spec and the watermarks are compared.
func (s *HPAStore) SpecChanged(old, cur any) bool {
	o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
	c, ok2 := cur.(*autoscalingv2.HorizontalPodAutoscaler)
	return !ok1 || !ok2 || o.Annotations[WatermarksAnnotation] != c.Annotations[WatermarksAnnotation] ||
		!equality.Semantic.DeepEqual(o.Spec, c.Spec)
}
