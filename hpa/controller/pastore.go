package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
)

// PodAutoscalerClient is what PodAutoscalerStore writes through.
type PodAutoscalerClient interface {
	Get(ctx context.Context, namespace, name string) (*v1alpha1.PodAutoscaler, error)
	UpdateStatus(ctx context.Context, pa *v1alpha1.PodAutoscaler) (*v1alpha1.PodAutoscaler, error)
}

// PodAutoscalerStore keeps PodAutoscalers: spec.metrics[].watermarks are
// the watermarks and status.history the history.
type PodAutoscalerStore struct {
	informer cache.SharedIndexInformer
	client   PodAutoscalerClient
	memo     writeMemo
}

// NewPodAutoscalerStore returns a store over an informer of PodAutoscalers.
func NewPodAutoscalerStore(informer cache.SharedIndexInformer, client PodAutoscalerClient) *PodAutoscalerStore {
	return &PodAutoscalerStore{informer: informer, client: client}
}

// NewPodAutoscalerInformer returns an informer of every namespace's
// PodAutoscalers (start it yourself).
func NewPodAutoscalerInformer(client *v1alpha1.Client, resync time.Duration) cache.SharedIndexInformer {
	pas := client.PodAutoscalers(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pas.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pas.Watch(ctx, opts)
		},
	}
	return cache.NewSharedIndexInformer(lw, &v1alpha1.PodAutoscaler{}, resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// PodAutoscalerClientFor adapts the typed client.
func PodAutoscalerClientFor(c *v1alpha1.Client) PodAutoscalerClient { return paClient{c} }

type paClient struct{ c *v1alpha1.Client }

func (p paClient) Get(ctx context.Context, namespace, name string) (*v1alpha1.PodAutoscaler, error) {
	return p.c.PodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (p paClient) UpdateStatus(ctx context.Context, pa *v1alpha1.PodAutoscaler) (*v1alpha1.PodAutoscaler, error) {
	return p.c.PodAutoscalers(pa.Namespace).UpdateStatus(ctx, pa, metav1.UpdateOptions{})
}

// Informer implements Store.
func (s *PodAutoscalerStore) Informer() cache.SharedIndexInformer { return s.informer }

// Get implements Store.
func (s *PodAutoscalerStore) Get(key string) (*Autoscaler, error) {
	cached, err := getCached(s.informer, key)
	if err != nil {
		return nil, err
	}
	obj := s.memo.newest(key, cached)
	if obj == nil {
		return nil, nil
	}
	pa := obj.(*v1alpha1.PodAutoscaler)
	spec, marks := pa.Spec.HPASpec()
	a := &Autoscaler{
		Key: key, Namespace: pa.Namespace, Name: pa.Name, Generation: pa.Generation,
		Ref: &corev1.ObjectReference{
			APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.Kind,
			Namespace: pa.Namespace, Name: pa.Name, UID: pa.UID, ResourceVersion: pa.ResourceVersion,
		},
		Spec: spec, Watermarks: watermarksFromAPI(marks), Status: pa.Status.HorizontalPodAutoscalerStatus,
		History: historyFromAPI(pa.Status.History), object: pa,
		Activation: pa.Spec.ActivationThresholds(), ScaleToZero: true,
	}
	a.Schedules, a.ScheduleErrs = parseSchedules(pa.Spec.Schedules)
	switch {
	case len(pa.Invalid) > 0:
		a.SpecErr = fmt.Errorf("values tidal cannot read, left unread: %s", strings.Join(slices.Concat(pa.Invalid, pa.Unread), "; "))
		a.SpecReason = EventInvalidSpec
	case len(pa.Unread) > 0:
		a.SpecErr = fmt.Errorf("quantities out of bounds, left unread: %s", strings.Join(pa.Unread, "; "))
		a.SpecReason = EventInvalidQuantity
	}
	return a, nil
}

// WriteStatus implements Store.
func (s *PodAutoscalerStore) WriteStatus(ctx context.Context, a *Autoscaler, status autoscalingv2.HorizontalPodAutoscalerStatus, history hpa.History) (bool, error) {
	pa := a.object.(*v1alpha1.PodAutoscaler)
	want := v1alpha1.PodAutoscalerStatus{
		HorizontalPodAutoscalerStatus: status,
		Reference:                     reference(a.Spec.ScaleTargetRef),
		Targets:                       Targets(a.Spec, a.Watermarks, status),
		History:                       historyToAPI(history),
	}
	if equality.Semantic.DeepEqual(pa.Status, want) {
		return false, nil
	}
	next := pa.DeepCopy()
	next.Status = want
	replaced := []string{pa.ResourceVersion}
	for attempt := 0; ; attempt++ {
		written, err := s.client.UpdateStatus(ctx, next)
		if err == nil {
			s.memo.remember(a.Key, replaced, written)
			return true, nil
		}
		if !apierrors.IsConflict(err) || attempt == 4 {
			return false, fmt.Errorf("update status of PodAutoscaler %s: %w", a.Key, err)
		}
		// Someone changed the object (its spec or metadata: tidal alone
		// writes the status): write the status over the newest version.
		fresh, gerr := s.client.Get(ctx, pa.Namespace, pa.Name)
		if gerr != nil {
			return false, fmt.Errorf("update status of PodAutoscaler %s: %w (and reading it again: %v)", a.Key, err, gerr)
		}
		fresh.Status = want
		next = fresh
		replaced = append(replaced, fresh.ResourceVersion)
	}
}

// SpecChanged implements Store: a PodAutoscaler's generation moves with its
// spec only.
func (s *PodAutoscalerStore) SpecChanged(old, cur any) bool {
	o, ok1 := old.(*v1alpha1.PodAutoscaler)
	c, ok2 := cur.(*v1alpha1.PodAutoscaler)
	return !ok1 || !ok2 || o.Generation != c.Generation
}
