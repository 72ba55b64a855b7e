package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// TestHugeWatermarksSync: watermarks however large (10P is 1e19
// milli-units; the CRD now refuses more than 1P, but an object stored before
// it did may hold more) are computed, not crashed on; this one once took the
// whole process down with an integer division by zero.
func TestHugeWatermarksSync(t *testing.T) {
	for _, w := range []v1alpha1.Watermarks{
		{High: ptr.To(resource.MustParse("10P"))},
		{High: ptr.To(resource.MustParse("1e18")), Low: ptr.To(resource.MustParse("1n")), MaxScaleUpPercent: ptr.To(int32(2147483647))},
	} {
		h := newHarness(t, hpa.DefaultConfig())
		h.c.cfg.Observer = NewObserver(prometheus.NewRegistry())
		h.deployment("ns", "web", 4)
		pa := cpuPA("ns", "web", 50, 1, 20)
		pa.Spec.Metrics[0].Watermarks = &w
		h.addPA(pa)
		h.sim.Set("cpu", metrics.Constant(0.4)) // 100%
		h.sync("ns/web")
		st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
		if c := condition(st, autoscalingv2.ScalingActive); c.Reason != hpa.ReasonValidMetricFound {
			t.Fatalf("watermarks %+v: ScalingActive %+v", w, c)
		}
		if got := h.scales.replicas("ns", "web"); got != 4 {
			t.Fatalf("watermarks %+v: replicas %d, want 4 (100%% is inside the band)", w, got)
		}
		if n := testutil.ToFloat64(h.c.cfg.Observer.panics); n != 0 {
			t.Fatalf("%v panics recovered", n)
		}
	}
}

// panicking is a metrics source that panics for the pods of app=web.
func panicking(next metrics.Source) metrics.Source {
	return metrics.SourceFunc(func(ctx context.Context, r metrics.Request) hpa.MetricData {
		if r.Selector.String() == "app=web" {
			var m map[string]int
			//lint:ignore SA5000 the nil map write is the panic under test
			m["boom"]++ // a nil map write: the kind of bug recovery is for
		}
		return next.Fetch(ctx, r)
	})
}

// TestPanicIsContainedToItsAutoscaler: a sync that panics holds its own
// autoscaler's replicas, says so in a condition, an event and a metric, and
// leaves every other autoscaler alone.
func TestPanicIsContainedToItsAutoscaler(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.c.cfg.Observer = NewObserver(prometheus.NewRegistry())
	h.source = panicking(h.sim)
	h.deployment("ns", "web", 2)
	h.deployment("ns", "api", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.addPA(cpuPA("ns", "api", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100% of the request: scale up

	_, err := h.c.Sync(quiet(), "ns/web")
	if err == nil || !strings.Contains(err.Error(), "internal error while syncing ns/web: assignment to entry in nil map") {
		t.Fatalf("sync of the failing autoscaler returned %v", err)
	}
	st := h.pa("ns/web").Status.HorizontalPodAutoscalerStatus
	if c := condition(st, autoscalingv2.ScalingActive); c.Status != corev1.ConditionFalse || c.Reason != ReasonInternalError ||
		!strings.Contains(c.Message, "holds its replicas: assignment to entry in nil map") {
		t.Fatalf("ScalingActive %+v", c)
	}
	if ev := h.events(); !hasEvent(ev, "Warning InternalError tidal failed to sync this autoscaler") {
		t.Fatalf("events %q", ev)
	}
	if got := h.scales.replicas("ns", "web"); got != 2 {
		t.Fatalf("the failing autoscaler's target went to %d replicas", got)
	}
	o := h.c.cfg.Observer
	if p, r := testutil.ToFloat64(o.panics), testutil.ToFloat64(o.reconciles.WithLabelValues(actionNone, errorInternal)); p != 1 || r != 1 {
		t.Fatalf("panics %v, internal-error syncs %v; want 1 and 1", p, r)
	}

	h.sync("ns/api")
	if got := h.scales.replicas("ns", "api"); got != 4 {
		t.Fatalf("the other autoscaler's target has %d replicas, want 4", got)
	}
}

// TestPanicOutsideTheDecisionIsContained: a panic after the decision (here
// in the node loop's capacity callback) is recovered too.
func TestPanicOutsideTheDecisionIsContained(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.c.cfg.Observer = NewObserver(prometheus.NewRegistry())
	h.c.cfg.Capacity = func(string, []*corev1.Pod) (int32, string) { panic("capacity view broken") }
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.1))

	gone, err := h.c.Sync(quiet(), "ns/web")
	if gone || err == nil || !strings.Contains(err.Error(), "capacity view broken") {
		t.Fatalf("sync returned %v, %v", gone, err)
	}
	if ev := h.events(); !hasEvent(ev, "Warning InternalError tidal failed to sync this autoscaler and holds its replicas: capacity view broken") {
		t.Fatalf("events %q", ev)
	}
	if p := testutil.ToFloat64(h.c.cfg.Observer.panics); p != 1 {
		t.Fatalf("panics %v, want 1", p)
	}
}

// TestRunSurvivesAPanickingAutoscaler: the workers go on after a panic: the
// other autoscaler is synced and the failing one is retried.
func TestRunSurvivesAPanickingAutoscaler(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.c.cfg.Observer = NewObserver(prometheus.NewRegistry())
	h.c.cfg.Workers = 1
	h.source = panicking(h.sim)
	h.deployment("ns", "web", 2)
	h.deployment("ns", "api", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.addPA(cpuPA("ns", "api", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2))

	ctx, cancel := context.WithCancel(quiet())
	var wg sync.WaitGroup
	wg.Go(func() { h.c.Run(ctx) })
	h.c.queue.Add("ns/web")
	h.c.queue.Add("ns/api")
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return h.scales.replicas("ns", "api") == 4 && testutil.ToFloat64(h.c.cfg.Observer.panics) >= 2, nil
	})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("api has %d replicas (want 4), %v panics recovered (want a retry of web): %v",
			h.scales.replicas("ns", "api"), testutil.ToFloat64(h.c.cfg.Observer.panics), err)
	}
}
