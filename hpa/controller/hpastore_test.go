package controller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

func hpaObject(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	pa := cpuPA(ns, name, 50, 1, 10)
	spec, _ := pa.Spec.HPASpec()
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

// slowStatusWrites makes status writes slow both ways, as a busy machine
// or API server does: the object a write was made from has often changed by
// the time it arrives, and the informer has seen the write by the time the
// controller hears back.
type slowStatusWrites struct{ HPAClient }

func (s slowStatusWrites) UpdateStatus(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	time.Sleep(100 * time.Millisecond)
	defer time.Sleep(100 * time.Millisecond)
	return s.HPAClient.UpdateStatus(ctx, h)
}

// The queue, the informer handlers and the HPA store together: an HPA
// object is synced as soon as it appears, its history lands in an
// annotation, and a spec change is picked up at once. The clientset checks
// resource versions as an API server does, so the controller's status
// writes, made from its cached copy and slowed down, never undo the test's
// edits: a stale write gets a conflict and is made again from the object as
// it is.
func TestRunDrivesHPAObjects(t *testing.T) {
	client, err := versionedClientset()
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	hpas := factory.Autoscaling().V2().HorizontalPodAutoscalers()
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	h.sim.Set("cpu", metrics.Constant(0.2))
	c, err := New(Config{
		Store:      NewHPAStore(hpas.Informer(), slowStatusWrites{HPAClientFor(client)}),
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
	// The controller's log goes to the test's, printed if it fails.
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()

	obj := hpaObject("ns", "web")
	obj.Annotations = map[string]string{WatermarksAnnotation: `[{"high":"90","low":"10"}]`}
	objects := client.AutoscalingV2().HorizontalPodAutoscalers("ns")
	if _, err := objects.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() *autoscalingv2.HorizontalPodAutoscaler {
		o, err := objects.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	// edit changes the object as a client does: read, change, write, and
	// again on a conflict with the controller's status writes.
	edit := func(change func(*autoscalingv2.HorizontalPodAutoscaler)) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			o := get()
			change(o)
			_, err := objects.Update(ctx, o, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
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
	edit(func(o *autoscalingv2.HorizontalPodAutoscaler) { o.Spec.MaxReplicas = 2 })
	waitFor(t, "the clamp to the new max", func() bool { return h.scales.replicas("ns", "web") == 2 })

	// A malformed watermarks annotation stops scaling with a clear condition.
	edit(func(o *autoscalingv2.HorizontalPodAutoscaler) { o.Annotations[WatermarksAnnotation] = `{"high":` })
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
	for _, raw := range []string{`[{}, {}, {}]`, `{"high":`, `[{"high": {"value": 1}}]`} {
		if _, err := parseWatermarks(raw, 2); err == nil || !strings.HasPrefix(err.Error(), "annotation "+WatermarksAnnotation) {
			t.Errorf("%s: error %v", raw, err)
		}
	}
}

// watermarkBound is a case of testdata/watermark-bounds.yaml.
type watermarkBound struct {
	Watermarks     json.RawMessage
	Field, Message string
}

// TestParseWatermarksRefusesWhatTheCRDRefuses: the annotation refuses each
// case the CRD refuses, at the same field with the same message, in the
// second entry of the list, and accepts what the CRD accepts.
func TestParseWatermarksRefusesWhatTheCRDRefuses(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "watermark-bounds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []watermarkBound
	if err := yaml.UnmarshalStrict(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		_, err := parseWatermarks(`[null,`+string(tc.Watermarks)+`]`, 2)
		switch {
		case tc.Message == "" && err != nil:
			t.Errorf("%s refused: %v", tc.Watermarks, err)
		case tc.Message == "":
		case err == nil:
			t.Errorf("%s accepted, want %s: %s", tc.Watermarks, tc.Field, tc.Message)
		case !strings.Contains(err.Error(), strings.TrimSuffix("[1]."+tc.Field, ".")+": ") || !strings.Contains(err.Error(), tc.Message):
			t.Errorf("%s: %v, want %s: %s", tc.Watermarks, err, tc.Field, tc.Message)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
