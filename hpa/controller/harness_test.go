package controller

import (
	"context"

	"fmt"
	"github.com/go-logr/logr"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// epoch is the fake clock's start (a whole second).
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeScales serves /scale from memory; errors can be injected.
type fakeScales struct {
	mu        sync.Mutex
	scales    map[string]*autoscalingv1.Scale // ns/name
	getErr    error
	updateErr error
	conflicts int // Update fails with a conflict this many times
	updates   int
}

func newFakeScales() *fakeScales { return &fakeScales{scales: map[string]*autoscalingv1.Scale{}} }

func (f *fakeScales) set(ns, name string, replicas int32, selector string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scales[ns+"/"+name] = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: replicas, Selector: selector},
	}
}

func (f *fakeScales) replicas(ns, name string) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scales[ns+"/"+name].Spec.Replicas
}

func (f *fakeScales) Get(_ context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	if f.getErr != nil {
		return nil, gr, f.getErr
	}
	s, ok := f.scales[ns+"/"+ref.Name]
	if !ok {
		return nil, gr, apierrors.NewNotFound(gr, ref.Name)
	}
	return s.DeepCopy(), gr, nil
}

func (f *fakeScales) Update(_ context.Context, ns string, gr schema.GroupResource, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates++
	if f.updateErr != nil {
		return nil, f.updateErr
	}
	cur := f.scales[ns+"/"+s.Name]
	if f.conflicts > 0 {
		f.conflicts--
		cur.ResourceVersion += "x"
		return nil, apierrors.NewConflict(gr, s.Name, fmt.Errorf("the object has been modified"))
	}
	if s.ResourceVersion != cur.ResourceVersion {
		return nil, apierrors.NewConflict(gr, s.Name, fmt.Errorf("stale resource version %s", s.ResourceVersion))
	}
	cur.Spec.Replicas = s.Spec.Replicas
	return cur.DeepCopy(), nil
}

// fakePAClient writes PodAutoscalers into the informer's indexer, as the
// API server and the watch together would.
type fakePAClient struct {
	mu      sync.Mutex
	indexer cache.Indexer
	writes  int
	rv      int
	err     error
}

func (f *fakePAClient) Get(_ context.Context, ns, name string) (*v1alpha1.PodAutoscaler, error) {
	obj, ok, _ := f.indexer.GetByKey(ns + "/" + name)
	if !ok {
		return nil, apierrors.NewNotFound(v1alpha1.GroupVersionResource.GroupResource(), name)
	}
	return obj.(*v1alpha1.PodAutoscaler).DeepCopy(), nil
}

func (f *fakePAClient) UpdateStatus(_ context.Context, pa *v1alpha1.PodAutoscaler) (*v1alpha1.PodAutoscaler, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.writes++
	f.rv++
	out := pa.DeepCopy()
	out.ResourceVersion = fmt.Sprintf("w%d", f.rv)
	if err := f.indexer.Update(out); err != nil {
		return nil, err
	}
	return out.DeepCopy(), nil
}

// harness is a controller over in-memory fakes.
type harness struct {
	t        *testing.T
	c        *Controller
	clock    *clocktesting.FakeClock
	scales   *fakeScales
	pods     cache.Indexer
	pas      *fakePAClient
	informer cache.SharedIndexInformer
	sim      *metrics.Simulated
	recorder *record.FakeRecorder
	source   metrics.Source
}

func newHarness(t testing.TB, cfg hpa.Config) *harness {
	h := &harness{
		clock:    clocktesting.NewFakeClock(epoch),
		scales:   newFakeScales(),
		pods:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		informer: cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1alpha1.PodAutoscaler{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		sim:      metrics.NewSimulated(),
		recorder: record.NewFakeRecorder(1000),
	}
	if tt, ok := t.(*testing.T); ok {
		h.t = tt
	}
	h.pas = &fakePAClient{indexer: h.informer.GetIndexer()}
	h.source = h.sim
	h.c = h.controller(t, cfg, NewPodAutoscalerStore(h.informer, h.pas))
	return h
}

// controller returns a controller over store and the harness's fakes.
func (h *harness) controller(t testing.TB, cfg hpa.Config, store Store) *Controller {
	c, err := New(Config{
		Store:    store,
		Pods:     ListerPods{corelisters.NewPodLister(h.pods)},
		Scales:   h.scales,
		Metrics:  metrics.SourceFunc(func(ctx context.Context, r metrics.Request) hpa.MetricData { return h.source.Fetch(ctx, r) }),
		Recorder: h.recorder,
		Clock:    h.clock,
		HPA:      cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deployment creates the scale and n Running, Ready pods requesting 100m
// cpu each, started 10 minutes ago.
func (h *harness) deployment(ns, name string, n int) {
	h.scales.set(ns, name, int32(n), "app="+name)
	for i := range n {
		h.addPod(ns, fmt.Sprintf("%s-%d", name, i), name)
	}
}

func (h *harness) addPod(ns, name, app string) {
	start := metav1.NewTime(epoch.Add(-10 * time.Minute))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start.Add(10 * time.Second)),
		}}},
	}
	if err := h.pods.Add(p); err != nil {
		panic(err)
	}
}

// scaleTo makes the fake workload match its scale: pods are added or
// removed to follow spec.replicas, as the Deployment controller would.
func (h *harness) follow(ns, name string) {
	want := int(h.scales.replicas(ns, name))
	var have []*corev1.Pod
	for _, o := range h.pods.List() {
		if p := o.(*corev1.Pod); p.Namespace == ns && p.Labels["app"] == name {
			have = append(have, p)
		}
	}
	for i := len(have); i < want; i++ {
		h.addPod(ns, fmt.Sprintf("%s-%d", name, i), name)
	}
	for i := want; i < len(have); i++ {
		_ = h.pods.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i)}})
	}
	h.scales.mu.Lock()
	h.scales.scales[ns+"/"+name].Status.Replicas = int32(want)
	h.scales.mu.Unlock()
}

// cpuPA is a PodAutoscaler of the deployment on cpu utilization.
func cpuPA(ns, name string, target int32, minR, maxR int32) *v1alpha1.PodAutoscaler {
	return &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uuid.NewUUID(), Generation: 1, ResourceVersion: "1"},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(minR), MaxReplicas: maxR,
			Metrics: []v1alpha1.MetricSpec{{MetricSpec: autoscalingv2.MetricSpec{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}},
			}}},
		},
	}
}

func (h *harness) addPA(pa *v1alpha1.PodAutoscaler) {
	if err := h.informer.GetIndexer().Add(pa); err != nil {
		panic(err)
	}
}

func (h *harness) pa(key string) *v1alpha1.PodAutoscaler {
	obj, ok, _ := h.informer.GetIndexer().GetByKey(key)
	if !ok {
		h.t.Fatalf("%s is gone", key)
	}
	return obj.(*v1alpha1.PodAutoscaler)
}

// sync runs one sync and fails the test on an error.
func (h *harness) sync(key string) {
	h.t.Helper()
	if _, err := h.c.Sync(quiet(), key); err != nil {
		h.t.Fatalf("sync %s: %v", key, err)
	}
}

// quiet is a context whose logger discards.
func quiet() context.Context { return klog.NewContext(context.Background(), logr.Discard()) }

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// hasEvent reports whether an event starts with prefix.
func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// condition returns a status condition.
func condition(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}
