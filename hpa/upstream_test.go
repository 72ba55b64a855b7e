package hpa

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
)

// Upstream's HorizontalController, driven in-process the way its own unit
// tests drive it: a fake clientset holds the HorizontalPodAutoscalers and
// pods, a fake scale client serves /scale, and an in-memory MetricsClient
// serves the metrics. Each autoscaler lives in a namespace of its own, so a
// batch of cases runs in one controller; what its first reconcile decides is
// read from the first /scale update and the first status update it sends.

const (
	targetName = "target"
	hpaName    = "hpa"
	// upstreamResync is the controller's resync period: the first
	// reconcile of each autoscaler comes this long after it is seen.
	upstreamResync = 20 * time.Millisecond
)

// caseNamespace is the namespace of case i.
func caseNamespace(i int) string { return fmt.Sprintf("c%d", i) }

// firstReconcile is what upstream's first reconcile of one autoscaler did.
type firstReconcile struct {
	// Status is the status it wrote.
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	// Rescaled tells whether it wrote /scale, and To the count.
	Rescaled bool
	To       int32
	// Start and End bound the reconcile in time: the GET of /scale and the
	// status update. Every time.Now() of the reconcile lies between.
	Start, End time.Time
}

// upstreamRecorder collects each namespace's first reconcile.
type upstreamRecorder struct {
	mu      sync.Mutex
	scales  map[string]*autoscalingv1.Scale
	partial map[string]*firstReconcile
	done    map[string]*firstReconcile
	all     chan struct{}
	want    int
}

func newUpstreamRecorder(want int) *upstreamRecorder {
	return &upstreamRecorder{
		scales: map[string]*autoscalingv1.Scale{}, partial: map[string]*firstReconcile{},
		done: map[string]*firstReconcile{}, all: make(chan struct{}), want: want,
	}
}

// getScale serves a GET of /scale and notes when the first one came.
func (r *upstreamRecorder) getScale(a core.Action) (bool, runtime.Object, error) {
	ga := a.(core.GetAction)
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := ga.GetNamespace()
	if _, ok := r.partial[ns]; !ok {
		r.partial[ns] = &firstReconcile{Start: time.Now()}
	}
	s, ok := r.scales[ns]
	if !ok || ga.GetName() != targetName {
		return true, nil, fmt.Errorf("no scale %s/%s", ns, ga.GetName())
	}
	return true, s.DeepCopy(), nil
}

// updateScale records the first PUT of /scale of a namespace, if it comes
// before that namespace's first status update: a PUT after it belongs to a
// later reconcile (the controller resyncs every upstreamResync), which may
// decide otherwise once a recommendation has left its window.
func (r *upstreamRecorder) updateScale(a core.Action) (bool, runtime.Object, error) {
	s := a.(core.UpdateAction).GetObject().(*autoscalingv1.Scale)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, finished := r.done[s.Namespace]; finished {
		return true, s.DeepCopy(), nil
	}
	if f, ok := r.partial[s.Namespace]; ok && !f.Rescaled {
		f.Rescaled, f.To = true, s.Spec.Replicas
	}
	return true, s.DeepCopy(), nil
}

// updateStatus records the first status update of a namespace; the fake
// clientset's tracker then stores it.
func (r *upstreamRecorder) updateStatus(a core.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "status" {
		return false, nil, nil
	}
	h := a.(core.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.partial[h.Namespace]
	if _, seen := r.done[h.Namespace]; seen || !ok {
		return false, nil, nil
	}
	f.End, f.Status = time.Now(), *h.Status.DeepCopy()
	r.done[h.Namespace] = f
	if len(r.done) == r.want {
		close(r.all)
	}
	return false, nil, nil
}

// caseMetrics is upstream's MetricsClient over every case's data, keyed by
// namespace and metric (see metricKey).
type caseMetrics struct {
	data map[string]*memMetrics
	errs map[string]error
}

func (m *caseMetrics) get(key string) (*memMetrics, error) {
	if err := m.errs[key]; err != nil {
		return nil, err
	}
	d, ok := m.data[key]
	if !ok {
		return nil, fmt.Errorf("no data for %s", key)
	}
	return d, nil
}

func (m *caseMetrics) GetResourceMetric(ctx context.Context, res v1.ResourceName, ns string, sel labels.Selector, container string) (metricsclient.PodMetricsInfo, time.Time, error) {
	d, err := m.get(metricKey(ns, "resource", string(res), container))
	if err != nil {
		return nil, time.Time{}, err
	}
	return d.GetResourceMetric(ctx, res, ns, sel, container)
}

func (m *caseMetrics) GetRawMetric(name, ns string, sel, metricSel labels.Selector) (metricsclient.PodMetricsInfo, time.Time, error) {
	d, err := m.get(metricKey(ns, "pods", name, ""))
	if err != nil {
		return nil, time.Time{}, err
	}
	return d.GetRawMetric(name, ns, sel, metricSel)
}

func (m *caseMetrics) GetObjectMetric(name, ns string, ref *autoscalingv2.CrossVersionObjectReference, metricSel labels.Selector) (int64, time.Time, error) {
	d, err := m.get(metricKey(ns, "object", name, ""))
	if err != nil {
		return 0, time.Time{}, err
	}
	return d.GetObjectMetric(name, ns, ref, metricSel)
}

func (m *caseMetrics) GetExternalMetric(name, ns string, sel labels.Selector) ([]int64, time.Time, error) {
	d, err := m.get(metricKey(ns, "external", name, ""))
	if err != nil {
		return nil, time.Time{}, err
	}
	return d.GetExternalMetric(name, ns, sel)
}

// metricKey identifies a metric's data: what upstream's MetricsClient is
// asked for.
func metricKey(ns, kind, name, container string) string {
	return ns + "/" + kind + "/" + name + "/" + container
}

// specKey is the metricKey of a metric spec in namespace ns.
func specKey(ns string, m autoscalingv2.MetricSpec) string {
	switch {
	case m.Resource != nil:
		return metricKey(ns, "resource", string(m.Resource.Name), "")
	case m.ContainerResource != nil:
		return metricKey(ns, "resource", string(m.ContainerResource.Name), m.ContainerResource.Container)
	case m.Pods != nil:
		return metricKey(ns, "pods", m.Pods.Metric.Name, "")
	case m.Object != nil:
		return metricKey(ns, "object", m.Object.Metric.Name, "")
	case m.External != nil:
		return metricKey(ns, "external", m.External.Metric.Name, "")
	}
	return metricKey(ns, string(m.Type), "", "")
}

// upstreamBatch is one run of upstream's controller over a batch of cases.
type upstreamBatch struct {
	cfg   Config
	cases []reconcileCase
}

// run starts the controller, waits for every autoscaler's first reconcile,
// stops it and returns what each did, index-aligned with the cases.
func (b upstreamBatch) run(t *testing.T) []*firstReconcile {
	t.Helper()
	rec := newUpstreamRecorder(len(b.cases))
	metrics := &caseMetrics{data: map[string]*memMetrics{}, errs: map[string]error{}}
	var objs []runtime.Object
	for i, c := range b.cases {
		ns := caseNamespace(i)
		h := c.object(ns)
		objs = append(objs, h)
		for _, p := range c.Pods {
			p = p.DeepCopy()
			p.Namespace = ns
			objs = append(objs, p)
		}
		rec.scales[ns] = c.scale(ns)
		for j, m := range h.Spec.Metrics {
			key := specKey(ns, m)
			if c.Metrics[j].Failed {
				metrics.errs[key] = errors.New(c.Metrics[j].failure())
				continue
			}
			metrics.data[key] = c.Metrics[j].mem()
		}
	}
	client := fake.NewClientset(objs...)
	client.PrependReactor("update", "horizontalpodautoscalers", rec.updateStatus)
	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "deployments", rec.getScale)
	scales.AddReactor("update", "deployments", rec.updateScale)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)

	// Upstream reports failed reconciles through klog's global logger;
	// what matters here is what it decided, compared below.
	klog.SetLogger(logr.Discard())
	defer klog.ClearLogger()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	hpaInformer, podInformer := factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods()
	hpaInformer.Informer()
	podInformer.Informer()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	ctrl := podautoscaler.NewHorizontalController(ctx, client.CoreV1(), scales, client.AutoscalingV2(), mapper, metrics,
		hpaInformer, podInformer, upstreamResync, b.cfg.DownscaleStabilizationWindow, b.cfg.Tolerance,
		b.cfg.CPUInitializationPeriod, b.cfg.InitialReadinessDelay)
	for i, c := range b.cases {
		injectHistory(t, ctrl, caseNamespace(i)+"/"+hpaName, c.History)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ctrl.Run(ctx, 2)
	}()
	select {
	case <-rec.all:
	case <-time.After(5 * time.Minute):
		t.Fatalf("upstream reconciled %d of %d autoscalers in 5 minutes", len(rec.done), len(b.cases))
	}
	cancel()
	<-stopped
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]*firstReconcile, len(b.cases))
	for i := range b.cases {
		out[i] = rec.done[caseNamespace(i)]
	}
	return out
}

// injectHistory gives upstream's controller the history of key, as its
// earlier reconciles would have left it: the recommendations and scale
// events live in unexported maps, set here by name through reflection (a
// renamed field fails the test, saying which).
func injectHistory(t *testing.T, ctrl *podautoscaler.HorizontalController, key string, h History) {
	t.Helper()
	v := reflect.ValueOf(ctrl).Elem()
	recs := make([]map[string]any, len(h.Recommendations))
	for i, r := range h.Recommendations {
		recs[i] = map[string]any{"recommendation": r.Replicas, "timestamp": r.Timestamp.Time}
	}
	setEntries(t, v, "recommendations", key, recs)
	for field, events := range map[string][]ScaleEvent{"scaleUpEvents": h.ScaleUpEvents, "scaleDownEvents": h.ScaleDownEvents} {
		es := make([]map[string]any, len(events))
		for i, e := range events {
			es[i] = map[string]any{"replicaChange": e.ReplicaChange, "timestamp": e.Timestamp.Time, "outdated": e.Outdated}
		}
		setEntries(t, v, field, key, es)
	}
}

// setEntries sets ctrl.<field>[key] to a slice of structs whose fields
// are given by name; nothing is set for no entries (as upstream has none).
func setEntries(t *testing.T, ctrl reflect.Value, field, key string, entries []map[string]any) {
	t.Helper()
	if len(entries) == 0 {
		return
	}
	f := ctrl.FieldByName(field)
	if !f.IsValid() || f.Kind() != reflect.Map || f.Type().Elem().Kind() != reflect.Slice {
		t.Fatalf("upstream HorizontalController has no map of slices %q", field)
	}
	m := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	slice := reflect.MakeSlice(f.Type().Elem(), len(entries), len(entries))
	for i, e := range entries {
		for name, val := range e {
			ef := slice.Index(i).FieldByName(name)
			if !ef.IsValid() || ef.Type() != reflect.TypeOf(val) {
				t.Fatalf("upstream %s entries have no %s field of type %T", field, name, val)
			}
			reflect.NewAt(ef.Type(), unsafe.Pointer(ef.UnsafeAddr())).Elem().Set(reflect.ValueOf(val))
		}
	}
	m.SetMapIndex(reflect.ValueOf(key), slice)
}

// maxUpstreamRounds bounds how often a case is run again because upstream's
// reconcile of it straddled a whole second (see compareWithUpstream).
const maxUpstreamRounds = 10

// caseOutcome is one case's outcome on both sides.
type caseOutcome struct {
	Case           reconcileCase
	Upstream, Ours *firstReconcile
	Now            time.Time
}

// compareWithUpstream runs the cases build returns through upstream's
// controller, then tidal's Reconcile at the same instant, and returns both
// outcomes per case. build makes the cases with every time a whole number
// of seconds from anchor, so every window, period and readiness boundary
// falls on anchor plus whole seconds: when upstream's reconcile ran inside
// (anchor+k s, anchor+(k+1) s), Reconcile at anchor+k s+0.5 s sees every
// comparison as upstream did. A case whose reconcile straddled such a
// second is built and run again with a new anchor.
func compareWithUpstream(t *testing.T, cfg Config, n int, build func(i int, anchor time.Time) reconcileCase) []caseOutcome {
	t.Helper()
	out := make([]caseOutcome, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	for round := 0; len(pending) > 0; round++ {
		if round == maxUpstreamRounds {
			t.Fatalf("%d cases: upstream's reconcile straddled a whole second in each of %d runs", len(pending), round)
		}
		anchor := time.Now().Truncate(time.Second)
		cases := make([]reconcileCase, len(pending))
		for j, i := range pending {
			cases[j] = build(i, anchor)
		}
		ups := upstreamBatch{cfg: cfg, cases: cases}.run(t)
		var again []int
		for j, i := range pending {
			second := anchor.Add(ups[j].Start.Sub(anchor).Truncate(time.Second))
			if !ups[j].End.Before(second.Add(time.Second)) {
				again = append(again, i)
				continue
			}
			now := second.Add(500 * time.Millisecond)
			out[i] = caseOutcome{Case: cases[j], Upstream: ups[j], Ours: cases[j].ours(cfg, now), Now: now}
		}
		pending = again
	}
	return out
}
