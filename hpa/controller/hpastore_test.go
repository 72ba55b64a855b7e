package controller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/go-logr/logr"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

func hpaObject(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	pa := cpuPA(ns, name, 50, 1, 10)
	spec, _ := pa.Spec.HPASpec()
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

// The queue, the informer handlers and the HPA store together: an HPA
// object is synced as soon as it appears, its history lands in an
// annotation, and a spec change is picked up at once. (The sync period is
// long: the fake clientset does not check resource versions, so a periodic
// status write could undo a concurrent edit that a real API server would
// reject as a conflict.)
func TestRunDrivesHPAObjects(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	hpas := factory.Autoscaling().V2().HorizontalPodAutoscalers()
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	h.sim.Set("cpu", metrics.Constant(0.2))
	c, err := New(Config{
		Store:      NewHPAStore(hpas.Informer(), HPAClientFor(client)),
		Pods:       ListerPods{corelisters.NewPodLister(h.pods)},
		Scales:     h.scales,
		Metrics:    h.sim,
		Recorder:   record.NewFakeRecorder(100),
		Clock:      clock.RealClock{},
		HPA:        hpa.DefaultConfig(),
		SyncPeriod: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()

	obj := hpaObject("ns", "web")
	obj.Annotations = map[string]string{WatermarksAnnotation: `[{"high":"90","low":"10"}]`}
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() *autoscalingv2.HorizontalPodAutoscaler {
		o, err := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	waitFor(t, "the first status", func() bool { return get().Status.CurrentReplicas == 2 })
	// 100% is above the 90% watermark: ceil(2*100/90) = 3.
	waitFor(t, "the watermark scale-up", func() bool { return h.scales.replicas("ns", "web") == 3 })
	o := get()
	var hist hpa.History
	if err := json.Unmarshal([]byte(o.Annotations[HistoryAnnotation]), &hist); err != nil || len(hist.Recommendations) == 0 {
		t.Fatalf("history annotation %q: %v", o.Annotations[HistoryAnnotation], err)
	}
	if c := condition(o.Status, autoscalingv2.ScalingActive); c.Reason != hpa.ReasonValidMetricFound {
		t.Fatalf("ScalingActive %+v", c)
	}

	// A spec change (maxReplicas) is acted on at once, here clamping.
	h.follow("ns", "web")
	o.Spec.MaxReplicas = 2
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the clamp to the new max", func() bool { return h.scales.replicas("ns", "web") == 2 })

	// A malformed watermarks annotation stops scaling with a clear condition.
	o = get()
	o.Annotations[WatermarksAnnotation] = `{"high":`
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the InvalidWatermarks condition", func() bool {
		c := condition(get().Status, autoscalingv2.ScalingActive)
		return c.Reason == EventInvalidWatermarks && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, WatermarksAnnotation)
	})
	cancel()
	<-done
}

func TestHPAStoreFallsBackToPatchingTheHistory(t *testing.T) {
	client := fake.NewClientset(hpaObject("ns", "web"))
	inf := informers.NewSharedInformerFactory(client, 0).Autoscaling().V2().HorizontalPodAutoscalers().Informer()
	obj, _ := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Get(context.Background(), "web", metav1.GetOptions{})
	obj.ResourceVersion = "1" // as an API server would have it
	_ = inf.GetIndexer().Add(obj)
	dropping := &annotationDropper{HPAClient: HPAClientFor(client)}
	s := NewHPAStore(inf, dropping)
	a, err := s.Get("ns/web")
	if err != nil {
		t.Fatal(err)
	}
	h := hpa.History{Recommendations: []hpa.Recommendation{{Replicas: 3, Timestamp: metav1.NewTime(epoch)}}}
	wrote, err := s.WriteStatus(context.Background(), a, autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 3}, h)
	if err != nil || !wrote {
		t.Fatalf("write: %v %v", wrote, err)
	}
	if dropping.patches != 1 {
		t.Fatalf("%d patches, want the history patched once", dropping.patches)
	}
	// Until the informer sees the write, Get serves what was written.
	a, _ = s.Get("ns/web")
	if a.Status.CurrentReplicas != 3 || len(a.History.Recommendations) != 1 {
		t.Fatalf("Get after the write: %+v %+v", a.Status, a.History)
	}
	if wrote, _ := s.WriteStatus(context.Background(), a, a.Status, a.History); wrote {
		t.Fatal("wrote an unchanged status")
	}
}

// annotationDropper behaves like an API server whose status updates ignore
// metadata.
type annotationDropper struct {
	HPAClient
	patches int
}

func (d *annotationDropper) UpdateStatus(ctx context.Context, o *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	o = o.DeepCopy()
	cur, err := d.Get(ctx, o.Namespace, o.Name)
	if err != nil {
		return nil, err
	}
	o.Annotations = cur.Annotations
	return d.HPAClient.UpdateStatus(ctx, o)
}

func (d *annotationDropper) PatchAnnotation(ctx context.Context, ns, name, key, value string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	d.patches++
	return d.HPAClient.PatchAnnotation(ctx, ns, name, key, value)
}

func TestParseWatermarks(t *testing.T) {
	marks, err := parseWatermarks(`[null, {"high": "80", "maxScaleUpPercent": 50}]`, 2)
	if err != nil || len(marks) != 2 || marks[0] != nil || marks[1].High.String() != "80" || *marks[1].MaxScaleUpPercent != 50 {
		t.Fatalf("marks %+v, err %v", marks, err)
	}
	if _, err := parseWatermarks(`[{}, {}, {}]`, 2); err == nil {
		t.Fatal("more entries than metrics must be an error")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
