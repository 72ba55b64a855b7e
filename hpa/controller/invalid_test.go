package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// TestUndecodablePodAutoscalersAreReportedOnThemselves: beside a good
// PodAutoscaler, one listed whose schedule's duration overflows Go's
// time.Duration and one arriving by the watch whose maxReplicas does not
// fit in 32 bits reach tidal's informer through the typed client: the
// informer syncs, the good one scales, each bad one is left unscaled with
// ScalingActive False (InvalidSpec, naming the field), a warning event,
// and the metric tidal_pod_autoscaler_invalid_specs{reason="InvalidSpec"}
// counts both. Before each object was decoded apart, the list failed
// ("time: invalid duration") and the informer never synced.
func TestUndecodablePodAutoscalersAreReportedOnThemselves(t *testing.T) {
	withSchedule := cpuPA("ns", "api", 50, 1, 10)
	withSchedule.Spec.Schedules = []v1alpha1.Schedule{{Name: "peak", Start: "@daily", Duration: metav1.Duration{Duration: 4242}, MinReplicas: 2}}
	listed := paJSON(t, withSchedule, `"4.242µs"`, `"99999999999h"`)
	watched := paJSON(t, cpuPA("ns", "db", 50, 1, 1717), `1717`, `3000000000`)
	srv := newPAServer(t, [][]byte{paJSON(t, cpuPA("ns", "web", 50, 1, 10), "", ""), listed}, watched)

	h := watchPAServer(t, srv, "ns/db")
	h.c.cfg.Observer = NewObserver(prometheus.NewRegistry())
	for _, name := range []string{"web", "api", "db"} {
		h.deployment("ns", name, 2)
	}
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100% of the request

	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("the valid autoscaler scaled web to %d, want 4", got)
	}
	for _, tc := range []struct{ name, want string }{
		{"api", `spec.schedules[0].duration: Invalid value: "99999999999h": should match`},
		{"db", "spec: "},
	} {
		h.sync("ns/" + tc.name)
		if got := h.scales.replicas("ns", tc.name); got != 2 {
			t.Errorf("%s scaled to %d on a spec tidal could not read", tc.name, got)
		}
		cond := condition(srv.status(t, tc.name), autoscalingv2.ScalingActive)
		if cond.Status != corev1.ConditionFalse || cond.Reason != EventInvalidSpec || !strings.Contains(cond.Message, tc.want) {
			t.Errorf("%s: ScalingActive %+v, want False %s naming %s", tc.name, cond, EventInvalidSpec, tc.want)
		}
		if ev := h.events(); !hasEvent(ev, "Warning InvalidSpec values tidal cannot read, left unread: "+tc.want) {
			t.Errorf("%s: events %q, want a warning naming %s", tc.name, ev, tc.want)
		}
	}
	if got := testutil.ToFloat64(h.c.cfg.Observer.invalid.WithLabelValues(EventInvalidSpec)); got != 2 {
		t.Errorf("tidal_pod_autoscaler_invalid_specs{reason=InvalidSpec} = %v, want 2", got)
	}
}

// watchPAServer starts, on the typed client of srv, the informer of
// PodAutoscalers and a controller on its store, and returns once the
// informer has synced and holds watched (the object the watch adds).
func watchPAServer(t *testing.T, srv *paServer, watched string) *harness {
	t.Helper()
	client, err := v1alpha1.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	inf := NewPodAutoscalerInformer(client, 0)
	h := newHarness(t, hpa.DefaultConfig())
	h.c = h.controller(t, hpa.DefaultConfig(), NewPodAutoscalerStore(inf, PodAutoscalerClientFor(client)))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if err := wait.PollUntilContextCancel(ctx, 0, true, func(context.Context) (bool, error) {
		_, ok, _ := inf.GetIndexer().GetByKey(watched)
		return ok, nil
	}); err != nil {
		t.Fatal(err)
	}
	return h
}

// An invalid spec is logged once, again only when its message changes,
// and counted until it is valid or gone.
func TestInvalidSpecLoggedOnce(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	o := NewObserver(prometheus.NewRegistry())
	var v invalidSpecs
	v.report(logger, o, "ns/a", EventInvalidSpec, "spec.x: bad")
	v.report(logger, o, "ns/a", EventInvalidSpec, "spec.x: bad")
	v.report(logger, o, "ns/b", EventInvalidQuantity, "spec.y: bad")
	if len(lines) != 2 || !strings.Contains(lines[0], "spec.x: bad") {
		t.Fatalf("log %q, want one line per autoscaler", lines)
	}
	v.report(logger, o, "ns/a", EventInvalidSpec, "spec.z: bad")
	if len(lines) != 3 {
		t.Fatalf("log %q, want a line for the changed message", lines)
	}
	if got := testutil.ToFloat64(o.invalid.WithLabelValues(EventInvalidSpec)); got != 1 {
		t.Errorf("InvalidSpec gauge %v, want 1", got)
	}
	v.forget(o, "ns/a")
	v.forget(o, "ns/b")
	if got := testutil.ToFloat64(o.invalid.WithLabelValues(EventInvalidSpec)) + testutil.ToFloat64(o.invalid.WithLabelValues(EventInvalidQuantity)); got != 0 {
		t.Errorf("gauges %v after both are valid, want 0", got)
	}
}

// An HPA's history annotation (tidal's own) that does not decode, whole or
// in part, gives no history, not half of one.
func TestUnreadableHPAHistoryStartsAnew(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &autoscalingv2.HorizontalPodAutoscaler{}, 0, cache.Indexers{})
	s := NewHPAStore(inf, nil)
	for i, raw := range []string{
		`{"recommendations": [{"time": "2026-03-01T12:00:00Z", "replicas": 3}], "scaleUpEvents": "x"}`,
		`{"recommendations": [`,
	} {
		h := hpaObject("ns", "web")
		h.Name = fmt.Sprintf("web-%d", i)
		h.Annotations = map[string]string{HistoryAnnotation: raw}
		if err := inf.GetIndexer().Add(h); err != nil {
			t.Fatal(err)
		}
		a, err := s.Get("ns/" + h.Name)
		if err != nil || a == nil {
			t.Fatalf("Get: %v", err)
		}
		if len(a.History.Recommendations)+len(a.History.ScaleUpEvents)+len(a.History.ScaleDownEvents) != 0 {
			t.Errorf("history %q read as %+v, want none", raw, a.History)
		}
	}
}
