package podloop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// Without the CRD the pod loop waits and the node loop runs; once the CRD
// is applied, PodAutoscalers are driven without a restart.
func TestHPAWaitsForTheCRD(t *testing.T) {
	parallel(t)
	if served, _ := controller.PodAutoscalersServed(cluster(t).Client.Discovery()); served {
		t.Skip("the PodAutoscaler CRD was installed by an earlier test in this binary")
	}
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	hpaStartTidal(t, context.Background()) // returns once the node loop brought up hpa-a's node
	hpaDeployment(t, ns, "web", 1)
	time.Sleep(2 * time.Second)

	hpaInstallCRD(t)
	api.setCPU(ns, 200) // 200m over 1 pod of 100m: 200% on a 50% target
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 10))
	hpaWaitReplicas(t, ns, "web", 4, 45*time.Second)
}

// A Deployment follows a cpu metric up and down with the default behavior;
// status, printer columns and events read as for a HorizontalPodAutoscaler.
func TestHPAPodAutoscalerFollowsCPU(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	hpaStartTidal(t, context.Background(), "--hpa-downscale-stabilization=3s")
	hpaDeployment(t, ns, "web", 2)
	api.setCPU(ns, 250) // pods of 100m at a 50% target: ceil(250/50) = 5 replicas
	// Both replicas run before the first sync: a pod without metrics counts
	// as using nothing in a scale-up (Kubernetes' rule), which gives 3, not 4.
	hpaWaitRunning(t, ns, "web", 2)
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 8))

	// From 2 the legacy limit allows 4 first (max(2*2, 4)), then 5.
	trace := hpaTraceReplicas(t, ns, "web")
	hpaWaitReplicas(t, ns, "web", 5, 60*time.Second)
	hpaWaitRunning(t, ns, "web", 5)
	if got := trace.finish(); fmt.Sprint(got) != "[2 4 5]" {
		t.Fatalf("replicas went %v, want [2 4 5]", got)
	}
	hpaWaitEvent(t, ns, controller.EventSuccessfulRescale, "New size: 4; reason: cpu resource utilization (percentage of request) above target")
	var pa *v1alpha1.PodAutoscaler
	poll(t, 20*time.Second, "the status to settle at 5 replicas, 50% of 50%", func(context.Context) (bool, error) {
		pa = hpaGetPA(t, ns, "web")
		return pa.Status.CurrentReplicas == 5 && pa.Status.DesiredReplicas == 5 && pa.Status.Targets == "cpu: 50%/50%", nil
	})
	if c := hpaCondition(pa, autoscalingv2.ScalingActive); c.Status != corev1.ConditionTrue || c.Reason != hpa.ReasonValidMetricFound {
		t.Fatalf("ScalingActive %+v", c)
	}
	if c := hpaCondition(pa, autoscalingv2.AbleToScale); c.Status != corev1.ConditionTrue {
		t.Fatalf("AbleToScale %+v", c)
	}
	if pa.Status.LastScaleTime == nil || pa.Status.History == nil || pa.Status.Reference != "Deployment/web" {
		t.Fatalf("status %+v", pa.Status)
	}
	checkPrinterColumns(t, ns)

	api.setCPU(ns, 100) // ceil(100/50) = 2
	hpaWaitReplicas(t, ns, "web", 2, 60*time.Second)
	hpaWaitEvent(t, ns, controller.EventSuccessfulRescale, "New size: 2; reason: All metrics below target")
}

// checkPrinterColumns reads `kubectl get tpa` as a table.
func checkPrinterColumns(t *testing.T, ns string) {
	t.Helper()
	var table metav1.Table
	err := cluster(t).Client.CoreV1().RESTClient().Get().AbsPath("/apis/autoscaling.tidal.dev/v1alpha1/namespaces/"+ns+"/podautoscalers").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Into(&table)
	if err != nil {
		t.Fatalf("table: %v", err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "Name Reference Targets MinPods MaxPods Replicas Age" {
		t.Fatalf("columns %q", got)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[1:6]) != "[Deployment/web cpu: 50%/50% 1 8 5]" {
		t.Fatalf("rows %+v", table.Rows)
	}
}

// A custom behavior paces the scaling: one pod per 2 seconds each way, on
// a Pods metric from custom.metrics.k8s.io.
func TestHPACustomBehavior(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	hpaStartTidal(t, context.Background())
	hpaDeployment(t, ns, "web", 2)
	onePodPer2s := []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 2}}
	pa := hpaPodsAutoscaler(ns, "web", "qps", 10, 10, &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), Policies: onePodPer2s},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), Policies: onePodPer2s},
	})
	api.setPodsMetric(ns, "qps", 60) // 60 qps at 10 per pod: 6 replicas
	start := time.Now()
	trace := hpaTraceReplicas(t, ns, "web")
	hpaCreatePA(t, pa)
	hpaWaitReplicas(t, ns, "web", 6, 60*time.Second)
	up := time.Since(start)
	if got := trace.finish(); fmt.Sprint(got) != "[2 3 4 5 6]" {
		t.Fatalf("replicas went %v, want one pod at a time [2 3 4 5 6]", got)
	}
	if up < 6*time.Second {
		t.Fatalf("4 single-pod steps took %v, under the policy's 3 periods of 2s", up)
	}
	hpaWaitRunning(t, ns, "web", 6)
	// Within a period of the last scale-up, the scale-down policy counts
	// from the count before it (Kubernetes nets both directions): let the
	// period pass so that each step is one pod.
	time.Sleep(3 * time.Second)

	api.setPodsMetric(ns, "qps", 20) // 2 replicas
	trace = hpaTraceReplicas(t, ns, "web")
	hpaWaitReplicas(t, ns, "web", 2, 60*time.Second)
	if got := trace.finish(); fmt.Sprint(got) != "[6 5 4 3 2]" {
		t.Fatalf("replicas went %v, want one pod at a time [6 5 4 3 2]", got)
	}
	if c := hpaCondition(hpaGetPA(t, ns, "web"), autoscalingv2.ScalingLimited); c.Reason == "" {
		t.Fatalf("no ScalingLimited condition: %+v", hpaGetPA(t, ns, "web").Status.Conditions)
	}
}

// --hpa-objects drives a standard autoscaling/v2 HorizontalPodAutoscaler on
// an External metric from external.metrics.k8s.io; its history lives in an
// annotation.
func TestHPAObjects(t *testing.T) {
	parallel(t)
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	hpaStartTidal(t, context.Background(), "--hpa-objects=true", "--hpa-downscale-stabilization=2s")
	hpaDeployment(t, ns, "worker", 1)
	api.setExternal(ns, "queue", 30)
	obj := hpaQueueAutoscaler(ns, "worker")
	hpas := cluster(t).Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := hpas.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hpaWaitReplicas(t, ns, "worker", 3, 60*time.Second)
	hpaWaitRunning(t, ns, "worker", 3)
	poll(t, 20*time.Second, "the HPA status", func(ctx context.Context) (bool, error) {
		h, err := hpas.Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ok := h.Status.CurrentReplicas == 3 && h.Status.DesiredReplicas == 3 && len(h.Status.CurrentMetrics) == 1 &&
			h.Status.CurrentMetrics[0].External != nil && h.Status.CurrentMetrics[0].External.Current.AverageValue.String() == "10" &&
			strings.Contains(h.Annotations[controller.HistoryAnnotation], `"replicas":3`)
		return ok, nil
	})
	hpaWaitEvent(t, ns, controller.EventSuccessfulRescale, "New size: 3; reason: external metric queue(nil) above target")

	api.setExternal(ns, "queue", 5)
	hpaWaitReplicas(t, ns, "worker", 1, 60*time.Second)
}

// A metric source outage holds the replicas: ScalingActive turns False with
// the reason, and nothing scales down until the metrics are back.
func TestHPAMetricOutageHoldsReplicas(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	hpaStartTidal(t, context.Background(), "--hpa-downscale-stabilization=1s")
	hpaDeployment(t, ns, "web", 2)
	api.setCPU(ns, 200)
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 10))
	hpaWaitReplicas(t, ns, "web", 4, 60*time.Second)
	hpaWaitRunning(t, ns, "web", 4)

	api.setCPU(ns, 0)
	api.setDown(ns, true)
	poll(t, 20*time.Second, "ScalingActive=False on the failing metric", func(context.Context) (bool, error) {
		c := hpaCondition(hpaGetPA(t, ns, "web"), autoscalingv2.ScalingActive)
		return c.Status == corev1.ConditionFalse && c.Reason == hpa.ReasonFailedGetResourceMetric &&
			strings.Contains(c.Message, "the test's metrics pipeline is down"), nil
	})
	hpaHoldReplicas(t, ns, "web", 4, 6*time.Second)
	hpaWaitEvent(t, ns, hpa.ReasonFailedGetResourceMetric, "unable to fetch metrics from resource metrics API")
	hpaWaitEvent(t, ns, controller.EventFailedComputeMetricsReplicas, "invalid metrics (1 invalid out of 1)")
	if pa := hpaGetPA(t, ns, "web"); pa.Status.DesiredReplicas != 4 {
		t.Fatalf("desiredReplicas %d during the outage, want the last decision (4) kept", pa.Status.DesiredReplicas)
	}

	api.setDown(ns, false)
	hpaWaitReplicas(t, ns, "web", 1, 30*time.Second)
}

// tidal restarted in the middle of a scale-down window carries on from the
// history in the PodAutoscaler's status: the scale-down comes when the
// window that began before the restart ends, not earlier, and not a whole
// window after the restart as a controller that forgot would do.
func TestHPARestartKeepsStabilization(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	const window = 30 * time.Second
	flags := []string{"--hpa-downscale-stabilization=" + window.String()}
	first := hpaStartTidal(t, context.Background(), flags...)
	hpaDeployment(t, ns, "web", 2)
	api.setCPU(ns, 200)
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 10))
	hpaWaitReplicas(t, ns, "web", 4, 60*time.Second)
	hpaWaitRunning(t, ns, "web", 4)
	// The load drops once the persisted history holds a recommendation of
	// 4 made after every replica runs: syncs that find pods without
	// metrics record none, so that moment cannot be told by a sleep.
	running := time.Now()
	poll(t, 30*time.Second, "a recommendation of 4 persisted after the replicas run", func(context.Context) (bool, error) {
		for _, r := range hpaGetPA(t, ns, "web").Status.History.Recommendations {
			if r.Replicas == 4 && !r.Timestamp.Time.Before(running) {
				return true, nil
			}
		}
		return false, nil
	})

	api.setCPU(ns, 40) // one replica's worth
	dropped := time.Now()
	// Held long enough that a restart forgetting the window would scale
	// down clearly later than one that kept it, however late the syncs of
	// a loaded machine come.
	hpaHoldReplicas(t, ns, "web", 4, 20*time.Second)
	before := hpaGetPA(t, ns, "web").Status.History
	var kept v1alpha1.Recommendation
	for _, r := range before.Recommendations {
		if r.Replicas == 4 {
			kept = r
		}
	}
	if kept.Timestamp.IsZero() || kept.Timestamp.Time.Before(running) {
		t.Fatalf("the status history %+v lacks the recommendation of 4 made after the replicas ran (at %v)", before, running)
	}
	if err := first.Stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	restarted := time.Now()
	hpaStartTidal(t, context.Background(), flags...)
	// The new process's first syncs extend the persisted history rather
	// than starting a new one.
	poll(t, 20*time.Second, "the restarted tidal to sync", func(context.Context) (bool, error) {
		var fresh, old bool
		for _, r := range hpaGetPA(t, ns, "web").Status.History.Recommendations {
			fresh = fresh || r.Timestamp.Time.After(restarted)
			old = old || (r.Replicas == 4 && r.Timestamp.Equal(&kept.Timestamp))
		}
		if fresh && !old {
			return false, errors.New("the recommendation of 4 from before the restart is gone")
		}
		return fresh && old, nil
	})

	var scaledDown time.Time
	poll(t, 2*window, "the scale-down after the window", func(ctx context.Context) (bool, error) {
		r, err := hpaReplicas(t, ctx, ns, "web")
		if r < 4 && scaledDown.IsZero() {
			scaledDown = time.Now()
		}
		return r == 1, err
	})
	after := scaledDown.Sub(dropped)
	t.Logf("load dropped; restart after %v; scale-down after %v (window %v)", restarted.Sub(dropped).Round(time.Millisecond), after.Round(time.Millisecond), window)
	if after < window-3*time.Second {
		t.Fatalf("scaled down %v after the load dropped: before the %v window ended", after, window)
	}
	if forgetful := restarted.Sub(dropped) + window; after > forgetful-3*time.Second {
		t.Fatalf("scaled down %v after the load dropped: as late as a restart that forgot the window (%v)", after, forgetful)
	}
}

// The simulated metric source (tidal-local) drives a scale-up from a load
// set through the context Run is given.
func TestHPASimulatedSource(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	sim := metrics.NewSimulated()
	hpaStartTidalWith(t, context.Background(), []app.Option{app.WithSimulatedMetrics(sim)}, "--hpa-metrics-source=simulated")
	hpaDeployment(t, ns, "web", 1)
	sim.Set(ns+"/cpu", metrics.Constant(0.3)) // 300m: 6 pods at the 50% target
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 10))
	hpaWaitReplicas(t, ns, "web", 6, 60*time.Second)
}

// The Prometheus source against a real Prometheus server scraping a test
// exporter: a PromQL External metric drives a scale-up.
func TestHPAPrometheusSource(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	var depth atomic.Int64
	depth.Store(5)
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE tidal_test_queue_depth gauge\ntidal_test_queue_depth{queue=\"jobs\"} %d\n", depth.Load())
	}))
	defer exporter.Close()
	promURL := startPrometheus(t, strings.TrimPrefix(exporter.URL, "http://"))

	ns := hpaNamespace(t)
	hpaStartTidal(t, context.Background(), "--prometheus-url="+promURL)
	hpaDeployment(t, ns, "worker", 1)
	const query = `sum(tidal_test_queue_depth{queue="jobs"})`
	pa := &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "worker"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
			Metrics: []v1alpha1.MetricSpec{{MetricSpec: autoscalingv2.MetricSpec{
				Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: metrics.PrometheusMetricName,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{metrics.PrometheusQueryLabel: query}}},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)},
				},
			}}},
		},
	}
	hpaCreatePA(t, pa)
	poll(t, 30*time.Second, "the metric read from Prometheus", func(context.Context) (bool, error) {
		st := hpaGetPA(t, ns, "worker").Status
		return len(st.CurrentMetrics) == 1 && st.CurrentMetrics[0].External != nil, nil
	})
	if r, _ := hpaReplicas(t, context.Background(), ns, "worker"); r != 1 {
		t.Fatalf("replicas %d at a queue depth of 5, want 1", r)
	}
	depth.Store(50) // 50 at 10 per replica: 5 replicas
	hpaWaitReplicas(t, ns, "worker", 5, 60*time.Second)
	if got := hpaGetPA(t, ns, "worker").Status.Targets; !strings.Contains(got, "prometheus: ") {
		t.Fatalf("targets %q", got)
	}
}

// startPrometheus runs a Prometheus server scraping target every second
// until the test ends; it returns its URL once the target's series can be
// queried.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	server := testenv.StartPrometheus(t, []string{target})
	prom, err := metrics.NewPrometheus(server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "Prometheus to have scraped the exporter", func(ctx context.Context) (bool, error) {
		values, _, err := prom.Query(ctx, `tidal_test_queue_depth`)
		return err == nil && len(values) == 1, err
	})
	return server.URL
}

// The pod loop's flags fail with a message naming the flag and the value.
func TestHPAFlagValidation(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	for _, tc := range []struct {
		arg, want string
	}{
		{"--hpa-workers=0", "--hpa-workers=0 must be at least 1"},
		{"--hpa-sync-period=0s", "--hpa-sync-period=0s must be positive"},
		{"--hpa-tolerance=1.5", "--hpa-tolerance=1.5 must be in [0, 1)"},
		{"--hpa-downscale-stabilization=-1s", "--hpa-downscale-stabilization=-1s must not be negative"},
		{"--hpa-metrics-source=magic", `--hpa-metrics-source="magic": want "api" or "simulated"`},
		{"--prometheus-url=ftp://prom:9090", `--prometheus-url="ftp://prom:9090": want an http:// or https:// URL`},
	} {
		opts := config.NewOptions()
		fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
		opts.AddFlags(fs)
		if err := fs.Parse([]string{tc.arg}); err != nil {
			t.Fatalf("%s: %v", tc.arg, err)
		}
		if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.arg, err, tc.want)
		}
	}
	opts := config.NewOptions()
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if opts.HPA.Workers != 5 || opts.HPA.SyncPeriod != 15*time.Second || opts.HPA.HPAObjects || opts.HPA.MetricsSource != "api" {
		t.Fatalf("defaults %+v", opts.HPA)
	}
}

// The CRD's OpenAPI schema and rules reject malformed PodAutoscalers at the
// API server.
func TestHPACRDValidation(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.PodAutoscaler)
		want   string
	}{
		{"min above max", func(pa *v1alpha1.PodAutoscaler) { pa.Spec.MinReplicas = ptr.To[int32](9) }, "minReplicas must not be greater than maxReplicas"},
		{"zero max", func(pa *v1alpha1.PodAutoscaler) { pa.Spec.MaxReplicas = 0; pa.Spec.MinReplicas = nil }, "spec.maxReplicas"},
		{"resource type without resource", func(pa *v1alpha1.PodAutoscaler) { pa.Spec.Metrics[0].Resource = nil }, "resource must be set when type is Resource"},
		{"empty watermarks", func(pa *v1alpha1.PodAutoscaler) { pa.Spec.Metrics[0].Watermarks = &v1alpha1.Watermarks{} }, "set high, low or both"},
		{"tolerance over 100", func(pa *v1alpha1.PodAutoscaler) {
			pa.Spec.Metrics[0].Watermarks = &v1alpha1.Watermarks{High: ptr.To(resource.MustParse("80")), HighTolerancePercent: ptr.To[int32](150)}
		}, "highTolerancePercent"},
	} {
		pa := hpaCPUAutoscaler(ns, "bad", 50, 1, 8)
		tc.mutate(pa)
		_, err := hpaPAClient(t).PodAutoscalers(ns).Create(context.Background(), pa, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	good := hpaCPUAutoscaler(ns, "good", 50, 1, 8)
	good.Spec.Metrics[0].Watermarks = &v1alpha1.Watermarks{High: ptr.To(resource.MustParse("80")), Low: ptr.To(resource.MustParse("40"))}
	if _, err := hpaPAClient(t).PodAutoscalers(ns).Create(context.Background(), good, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a valid PodAutoscaler was rejected: %v", err)
	}
}
