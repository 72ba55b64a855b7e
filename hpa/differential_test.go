package hpa

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
)

// The differential tests drive upstream's code and this package with the
// same seeded random inputs and require identical answers: upstream's
// exported ReplicaCalculator against ComputeMetric, one metric at a time;
// and upstream's whole HorizontalController (run in-process, see
// upstream_test.go) against Reconcile and Decision.Status, whole syncs with
// behaviors, stabilization, history and conditions.

// memMetrics implements upstream's MetricsClient over in-memory data. Every
// call returns fresh copies: upstream deletes entries from the map it gets.
type memMetrics struct {
	pods     PodMetrics
	object   int64
	external []int64
	ts       time.Time
}

func (m *memMetrics) podInfo() metricsclient.PodMetricsInfo {
	out := make(metricsclient.PodMetricsInfo, len(m.pods))
	for k, v := range m.pods {
		out[k] = metricsclient.PodMetric{Timestamp: v.Timestamp, Window: v.Window, Value: v.Value}
	}
	return out
}

func (m *memMetrics) GetResourceMetric(context.Context, v1.ResourceName, string, labels.Selector, string) (metricsclient.PodMetricsInfo, time.Time, error) {
	return m.podInfo(), m.ts, nil
}

func (m *memMetrics) GetRawMetric(string, string, labels.Selector, labels.Selector) (metricsclient.PodMetricsInfo, time.Time, error) {
	return m.podInfo(), m.ts, nil
}

func (m *memMetrics) GetObjectMetric(string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return m.object, m.ts, nil
}

func (m *memMetrics) GetExternalMetric(string, string, labels.Selector) ([]int64, time.Time, error) {
	return append([]int64(nil), m.external...), m.ts, nil
}

// upstreamTolerances builds upstream's Tolerances, whose fields are
// unexported, by name through reflection; String() confirms the result.
func upstreamTolerances(t *testing.T, tol Tolerances) podautoscaler.Tolerances {
	var out podautoscaler.Tolerances
	v := reflect.ValueOf(&out).Elem()
	for name, val := range map[string]float64{"scaleUp": tol.Up, "scaleDown": tol.Down} {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Float64 {
			t.Fatalf("upstream Tolerances has no float64 field %q", name)
		}
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetFloat(val)
	}
	want := fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", tol.Down*100, tol.Up*100)
	if out.String() != want {
		t.Fatalf("upstream tolerances %s, want %s", out.String(), want)
	}
	return out
}

// lister returns a pod lister backed by a client-go informer indexer.
func lister(t *testing.T, pods []*v1.Pod) corelisters.PodLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPodLister(idx)
}

// outcome is what both implementations are compared on.
type outcome struct {
	Replicas    int32
	Utilization int32
	Value       int64
	Timestamp   time.Time
	Failed      bool
}

func (o outcome) String() string {
	if o.Failed {
		return "error"
	}
	return fmt.Sprintf("replicas=%d util=%d value=%d ts=%s", o.Replicas, o.Utilization, o.Value, o.Timestamp.Format(time.RFC3339Nano))
}

// diffCase is one random input.
type diffCase struct {
	kind      string
	resource  v1.ResourceName
	container string
	current   int32 // spec replicas (status replicas for per-pod targets)
	target    int64 // utilization percent or milli-value
	tol       Tolerances
	pods      []*v1.Pod
	data      *memMetrics
	now       time.Time
	readiness Readiness
}

var diffKinds = []string{"utilization", "containerUtilization", "averageValue", "pods", "objectValue", "objectAverage", "externalValue", "externalAverage"}

// newDiffCase draws one case of the given kind.
func newDiffCase(g *gen, kind string) diffCase {
	c := diffCase{kind: kind, now: g.now, tol: g.tolerances(), readiness: DefaultReadiness()}
	if g.chance(0.3) {
		c.readiness = Readiness{CPUInitializationPeriod: 2 * time.Minute, InitialReadinessDelay: 10 * time.Second}
	}
	c.resource = v1.ResourceCPU
	if g.chance(0.3) {
		c.resource = v1.ResourceMemory
	}
	shape := podShape{resource: c.resource, requests: true, podLevel: true, sidecars: true}
	if kind == "containerUtilization" {
		switch x := g.r.IntN(100); {
		case x < 80:
			c.container = "c0"
		case x < 90:
			c.container = "c1"
		case x < 98:
			c.container = "sc"
		default:
			c.container = "zz"
		}
	}
	n := g.between(0, 14)
	if g.chance(0.97) && n == 0 {
		n = 1
	}
	c.pods = g.pods(n, shape)
	c.data = &memMetrics{pods: g.podMetrics(c.pods, 3000), ts: g.ago(0, 60)}
	c.current = int32(g.between(1, 25))
	c.target = int64(g.between(1, 2500))
	switch kind {
	case "utilization", "containerUtilization":
		c.target = int64(g.between(1, 200))
	case "objectValue", "externalValue":
		c.data.object, c.data.external = int64(g.between(0, 40000)), g.values(20000)
		if g.chance(0.15) {
			c.current = 0
		}
		if g.chance(0.03) { // saturation: a sum past MaxInt64, a count past MaxInt32
			c.data.object, c.data.external, c.target = 1<<62, []int64{math.MaxInt64 - 5, 10}, 1
		}
	case "objectAverage", "externalAverage":
		c.data.object, c.data.external = int64(g.between(0, 40000)), g.values(20000)
		c.current = int32(g.between(0, 25))
		if g.chance(0.02) {
			c.data.external = []int64{math.MaxInt64 - 5, 10}
		}
	}
	return c
}

// upstream runs upstream's ReplicaCalculator on the case.
func (c diffCase) upstream(t *testing.T) outcome {
	calc := podautoscaler.NewReplicaCalculator(c.data, lister(t, c.pods), c.readiness.CPUInitializationPeriod, c.readiness.InitialReadinessDelay)
	sel := labels.SelectorFromSet(labels.Set{podLabelKey: podLabelValue})
	tol := upstreamTolerances(t, c.tol)
	obj := &autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "svc", APIVersion: "v1"}
	ext := &metav1.LabelSelector{}
	var o outcome
	var err error
	switch c.kind {
	case "utilization", "containerUtilization":
		var raw int64
		o.Replicas, o.Utilization, raw, o.Timestamp, err = calc.GetResourceReplicas(context.Background(), c.current, int32(c.target), c.resource, tol, testNamespace, sel, c.container)
		o.Value = raw
	case "averageValue":
		o.Replicas, o.Value, o.Timestamp, err = calc.GetRawResourceReplicas(context.Background(), c.current, c.target, c.resource, tol, testNamespace, sel, "")
	case "pods":
		o.Replicas, o.Value, o.Timestamp, err = calc.GetMetricReplicas(c.current, c.target, "m", tol, testNamespace, sel, labels.Everything())
	case "objectValue":
		o.Replicas, o.Value, o.Timestamp, err = calc.GetObjectMetricReplicas(c.current, c.target, "m", tol, testNamespace, obj, sel, labels.Everything())
	case "objectAverage":
		o.Replicas, o.Value, o.Timestamp, err = calc.GetObjectPerPodMetricReplicas(c.current, c.target, "m", tol, testNamespace, obj, labels.Everything())
	case "externalValue":
		o.Replicas, o.Value, o.Timestamp, err = calc.GetExternalMetricReplicas(c.current, c.target, "m", tol, testNamespace, ext, sel)
	case "externalAverage":
		o.Replicas, o.Value, o.Timestamp, err = calc.GetExternalPerPodMetricReplicas(c.current, c.target, "m", tol, testNamespace, ext)
	}
	if err != nil {
		return outcome{Failed: true}
	}
	return o
}

// spec returns the MetricSpec a controller would hold for the case.
func (c diffCase) spec() autoscalingv2.MetricSpec {
	util := int32(c.target)
	avg := milliQ(c.target)
	utilTarget := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util}
	avgTarget := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}
	valTarget := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &avg}
	id := autoscalingv2.MetricIdentifier{Name: "m"}
	obj := autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "svc", APIVersion: "v1"}
	switch c.kind {
	case "utilization":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: c.resource, Target: utilTarget}}
	case "containerUtilization":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: c.resource, Container: c.container, Target: utilTarget}}
	case "averageValue":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: c.resource, Target: avgTarget}}
	case "pods":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: id, Target: avgTarget}}
	case "objectValue":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: obj, Metric: id, Target: valTarget}}
	case "objectAverage":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: obj, Metric: id, Target: avgTarget}}
	case "externalValue":
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: valTarget}}
	}
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: avgTarget}}
}

// ours runs this package's ComputeMetric on the case, as a controller would.
func (c diffCase) ours(t *testing.T) outcome {
	s := Snapshot{Now: c.now, SpecReplicas: c.current, StatusReplicas: c.current, Pods: c.pods}
	d := MetricData{PodMetrics: c.data.pods, ObjectValue: c.data.object, ExternalValues: c.data.external, Timestamp: c.data.ts}
	r := ComputeMetric(s, Params{Tolerances: c.tol, Readiness: c.readiness}, c.spec(), d)
	if r.Err != nil {
		if r.Condition.Status != v1.ConditionFalse || r.Condition.Reason == "" {
			t.Fatalf("failed metric without a ScalingActive=False condition: %+v", r.Condition)
		}
		return outcome{Failed: true}
	}
	checkStatus(t, r)
	return outcome{Replicas: r.Replicas, Utilization: r.Proposal.Utilization, Value: r.Proposal.Value, Timestamp: r.Timestamp}
}

// checkStatus asserts that the status entry reports the proposal's figures.
func checkStatus(t *testing.T, r MetricResult) {
	t.Helper()
	var cur autoscalingv2.MetricValueStatus
	switch s := r.Status; {
	case s.Resource != nil:
		cur = s.Resource.Current
	case s.ContainerResource != nil:
		cur = s.ContainerResource.Current
	case s.Pods != nil:
		cur = s.Pods.Current
	case s.Object != nil:
		cur = s.Object.Current
	case s.External != nil:
		cur = s.External.Current
	default:
		t.Fatalf("empty status for a valid metric: %+v", r)
	}
	q := cur.AverageValue
	if q == nil {
		q = cur.Value
	}
	if q == nil || q.MilliValue() != r.Proposal.Value {
		t.Fatalf("status value %v does not report %dm", q, r.Proposal.Value)
	}
	if r.Utilization && (cur.AverageUtilization == nil || *cur.AverageUtilization != r.Proposal.Utilization) {
		t.Fatalf("status utilization %v does not report %d", cur.AverageUtilization, r.Proposal.Utilization)
	}
}

// diffCasesPerKind sizes the differential run: 8 kinds x 2,500 = 20,000 cases.
const diffCasesPerKind = 2500

// diffStats tallies what the differential cases exercised.
type diffStats struct{ proposals, errors, changed, foldBack int }

func TestDifferentialAgainstUpstreamReplicaCalculator(t *testing.T) {
	total, failures := 0, 0
	stats := map[string]*diffStats{}
	for k, kind := range diffKinds {
		st := &diffStats{}
		stats[kind] = st
		for i := range diffCasesPerKind {
			seed := uint64(k)<<32 | uint64(i)
			c := newDiffCase(newGen(seed, time.Now()), kind)
			up, ours := c.upstream(t), c.ours(t)
			total++
			st.tally(c, up)
			if up != ours && !(up.Failed && ours.Failed) {
				failures++
				if failures <= 10 {
					t.Errorf("seed %#x %s: upstream %v, ours %v", seed, kind, up, ours)
				}
			}
		}
	}
	if failures > 0 {
		t.Fatalf("%d of %d differential cases disagree", failures, total)
	}
	for _, kind := range diffKinds {
		st := stats[kind]
		if st.proposals < diffCasesPerKind/2 || st.changed < st.proposals/5 {
			t.Errorf("%s: %d proposals, %d changing the count: the generator is too tame or too hostile", kind, st.proposals, st.changed)
		}
		t.Logf("%-21s %4d proposals (%4d change the count, %4d with missing/unready pods), %4d errors: identical",
			kind, st.proposals, st.changed, st.foldBack, st.errors)
	}
	t.Logf("%d differential cases, all identical", total)
}

// tally records one case's outcome.
func (st *diffStats) tally(c diffCase, up outcome) {
	if up.Failed {
		st.errors++
		return
	}
	st.proposals++
	if up.Replicas != c.current {
		st.changed++
	}
	res := c.resource
	if c.kind == "pods" {
		res = ""
	}
	g := GroupPods(c.pods, c.data.pods, res, c.now, c.readiness)
	if len(g.Missing)+len(g.Unready) > 0 {
		st.foldBack++
	}
}

// The whole sync, differentially: random autoscalers (bounds, several
// metrics of every kind, some failing or negative, behaviors, earlier
// history, earlier conditions; see randomCase) go through upstream's
// HorizontalController and through Reconcile and Decision.Status, and must
// come out the same: the /scale write, current and desired replicas, the
// conditions in order (type, status, reason, message) and the current
// metrics.

// controllerDiffCases is the number of random cases per configuration.
const controllerDiffCases = 300

// diffConfigs are the controller settings the cases run under.
func diffConfigs() []Config {
	zero := DefaultConfig()
	zero.DownscaleStabilizationWindow = 0
	odd := Config{Tolerance: 0.05, CPUInitializationPeriod: 2 * time.Minute, InitialReadinessDelay: 10 * time.Second,
		DownscaleStabilizationWindow: 45 * time.Second}
	return []Config{DefaultConfig(), zero, odd}
}

func TestDifferentialReconcileAgainstUpstreamController(t *testing.T) {
	stats := map[string]int{}
	failures := 0
	for k, cfg := range diffConfigs() {
		outcomes := compareWithUpstream(t, cfg, controllerDiffCases, func(i int, anchor time.Time) reconcileCase {
			return newGen(uint64(k)<<32|uint64(i), anchor).randomCase()
		})
		for i, o := range outcomes {
			o.tally(stats)
			d := o.Upstream.diff(o.Ours)
			if d == nil {
				continue
			}
			failures++
			if failures <= 5 {
				t.Errorf("config %d seed %#x: upstream and tidal differ:\n%s\n\tcase: %s", k, uint64(k)<<32|uint64(i), strings.Join(d, "\n"), o.describe())
			}
		}
	}
	total := controllerDiffCases * len(diffConfigs())
	if failures > 0 {
		t.Fatalf("%d of %d cases differ", failures, total)
	}
	t.Logf("%d cases, all identical: %v", total, stats)
	for _, what := range []string{"scale up", "scale down", "hold", "no decision", "zero replicas", "clamped", "ScaledToZero removed", "stabilized", "rate limited", "bounded by min/max"} {
		if stats[what] < total/100 {
			t.Errorf("only %d of %d cases %s: the generator is too tame", stats[what], total, what)
		}
	}
}

// tally counts what a case exercised.
func (o caseOutcome) tally(stats map[string]int) {
	st, c := o.Upstream.Status, o.Case
	switch {
	case c.CurrentReplicas == 0:
		stats["zero replicas"]++
	case o.Upstream.Rescaled && conditionReason(st, autoscalingv2.ScalingActive) == "":
		stats["clamped"]++
	case conditionReason(st, autoscalingv2.ScalingActive) != ReasonValidMetricFound:
		stats["no decision"]++
	case !o.Upstream.Rescaled:
		stats["hold"]++
	case o.Upstream.To > c.CurrentReplicas:
		stats["scale up"]++
	default:
		stats["scale down"]++
	}
	if conditionIndex(c.HPA.Status.Conditions, autoscalingv2.ScaledToZero) >= 0 && conditionIndex(st.Conditions, autoscalingv2.ScaledToZero) < 0 {
		stats["ScaledToZero removed"]++
	}
	switch conditionReason(st, autoscalingv2.ScalingLimited) {
	case ReasonScaleUpLimit, ReasonScaleDownLimit:
		stats["rate limited"]++
	case ReasonTooManyReplicas, ReasonTooFewReplicas:
		stats["bounded by min/max"]++
	}
	switch conditionReason(st, autoscalingv2.AbleToScale) {
	case ReasonScaleUpStabilized, ReasonScaleDownStabilized:
		stats["stabilized"]++
	}
}

// conditionReason is the reason of a status condition ("" when absent).
func conditionReason(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	if i := conditionIndex(st.Conditions, t); i >= 0 {
		return st.Conditions[i].Reason
	}
	return ""
}

// describe prints a case for a failure message.
func (o caseOutcome) describe() string {
	c := o.Case
	h := c.object(testNamespace)
	var b strings.Builder
	fmt.Fprintf(&b, "current %d (status %d), min %v, max %d, at %s", c.CurrentReplicas, c.statusReplicas(), *h.Spec.MinReplicas, h.Spec.MaxReplicas, o.Now.Format(time.RFC3339Nano))
	fmt.Fprintf(&b, "\n\tbehavior %s\n\thistory %+v\n\tstatus conditions %s", jsonOf(h.Spec.Behavior), c.History, conditionList(h.Status.Conditions))
	for i, m := range h.Spec.Metrics {
		fmt.Fprintf(&b, "\n\tmetric %s: %s", jsonOf(m), jsonOf(c.Metrics[i].data()))
	}
	fmt.Fprintf(&b, "\n\t%d pods", len(c.Pods))
	return b.String()
}
