package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// A pod loop whose only worker is stuck (a metric fetch that never returns
// and ignores its deadline) fails /healthz after --max-inactivity while the
// node loop runs on, so that the kubelet restarts the pod; once the fetch
// returns, /healthz is ok again.
func TestHealthzFailsWhenThePodLoopIsStuck(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	deleteNodesOnCleanup(t, "lv-")
	ns := newNamespace(t)
	groups := writeGroups(t, "nodeGroups:\n- {name: lv-a, minSize: 0, maxSize: 1, zone: z, cpu: '2', memory: 4Gi, provisioningDelay: 200ms}\n")
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	sim := metrics.NewSimulated()
	sim.Set(ns+"/queue", func(time.Time) float64 {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return 1
	})
	runCtx := testenv.LogOnFailure(ctx, t, 2)
	tl := testenv.StartTidalWith(runCtx, t, cluster(t).KubeconfigPath, []app.Option{app.WithSimulatedMetrics(sim)}, "--local-node-groups="+groups, "--scan-interval=1s",
		"--leader-elect=false", "--hpa-objects=true", "--hpa-metrics-source=simulated", "--hpa-workers=1",
		"--hpa-sync-period=1s", "--max-inactivity=5s")
	t.Cleanup(unblock) // before tidal's own clean-up stops it: a stuck worker would hold Run
	healthz := func() (int, string, error) {
		resp, err := http.Get("http://" + tl.Address + "/healthz")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body)), err
	}
	poll(t, 30*time.Second, "/healthz ok", func(context.Context) (bool, error) {
		code, body, err := healthz()
		return code == http.StatusOK && body == "ok", err
	})

	create(t, cluster(t).Client.AppsV1().Deployments(ns).Create, deployment(ns, "worker", 1, "100m", "64Mi"))
	create(t, cluster(t).Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "worker"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 2,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)},
			}}},
		},
	})
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the pod loop never fetched the metric")
	}
	poll(t, 60*time.Second, "/healthz to fail on the stuck pod loop", func(context.Context) (bool, error) {
		code, body, err := healthz()
		return code == http.StatusInternalServerError && strings.Contains(body, "pod loop inactive for"), err
	})
	unblock()
	poll(t, 60*time.Second, "/healthz ok again once the fetch returned", func(context.Context) (bool, error) {
		code, body, err := healthz()
		return code == http.StatusOK && body == "ok", err
	})
}

// create creates obj, failing the test on an error.
func create[T any](t *testing.T, f func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	if _, err := f(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
