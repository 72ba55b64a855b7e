package podloop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

const queueMetric = `metrics: [{type: External, external: {metric: {name: queue}, target: {type: Value, value: "10"}}, activationThreshold: "2"}]
`

// The CRD's rules for scale to zero and schedules.
func TestCRDScaleToZeroAndSchedules(t *testing.T) {
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	window := `{name: office, start: "0 8 * * 1-5", duration: 12h, timeZone: Europe/Berlin, minReplicas: 4}`
	for _, tc := range []struct{ name, spec, refusal string }{
		{"zero with an External metric", "minReplicas: 0\n" + queueMetric, ""},
		{"zero with cpu only", "minReplicas: 0\n" + cpuMetric, "minReplicas 0 (scale to zero) needs at least one Object or External metric"},
		{"zero without metrics", "minReplicas: 0\n", "minReplicas 0 (scale to zero) needs at least one Object or External metric"},
		{"activation threshold on cpu", `metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}, activationThreshold: "1"}]`,
			"activationThreshold applies to Object and External metrics only"},
		{"negative activation threshold", strings.Replace(queueMetric, `activationThreshold: "2"`, `activationThreshold: "-1"`, 1), "must not be negative"},
		{"a schedule", cpuMetric + "schedules: [" + window + "]", ""},
		{"a schedule above max", cpuMetric + "schedules: [" + strings.Replace(window, "minReplicas: 4", "minReplicas: 9", 1) + "]",
			"a schedule's minReplicas must not be greater than maxReplicas"},
		{"two schedules of one name", cpuMetric + "schedules: [" + window + ", " + window + "]", "Duplicate value"},
		{"a duration that is no duration", cpuMetric + "schedules: [" + strings.Replace(window, "12h", "noon", 1) + "]", "should match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := createFromSpec(t, dyn, paResource, v1alpha1.Kind, ns, crdBase+tc.spec)
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Fatalf("error %v, want one saying %q", err, tc.refusal)
			}
		})
	}
}

// TestScaleToZeroAndBack: a Deployment at zero replicas on a node group at
// zero nodes. The External metric (from the simulated source) crossing its
// activation threshold brings the Deployment to one replica at once, and
// provision-ahead plans that replica's node; when the metric falls back to
// its threshold the Deployment goes back to zero, and the emptied node
// goes too.
func TestScaleToZeroAndBack(t *testing.T) {
	hpaInstallCRD(t)
	const group = "zr-pool"
	deleteNodesOnCleanup(t, group+"-")
	ns := hpaNamespace(t)
	sim := metrics.NewSimulated()
	groups := fmt.Sprintf("nodeGroups:\n- {name: %s, minSize: 0, maxSize: 2, initialSize: 0, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 2s}\n", group)
	runCtx := testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity)
	tl := testenv.StartTidalWith(runCtx, t, cluster.KubeconfigPath, []app.Option{app.WithSimulatedMetrics(sim)},
		"--leader-elect=false", "--local-node-groups="+writeGroups(t, groups), "--scan-interval=2s",
		"--provision-ahead=true", "--hpa-metrics-source=simulated", "--hpa-sync-period=2s",
		"--scale-down-unneeded-time=2s", "--scale-down-delay-after-add=0s", "--scale-down-delay-after-delete=0s")

	web := deployment(ns, "web", 0, "900m", "1Gi")
	web.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: group}
	create(t, cluster.Client.AppsV1().Deployments(ns).Create, web)
	sim.Set(ns+"/queue", metrics.Constant(2)) // at the threshold: idle
	hpaCreatePA(t, zeroAutoscaler(ns))
	poll(t, 30*time.Second, "ScaledToZero True", func(context.Context) (bool, error) {
		return hpaCondition(hpaGetPA(t, ns, "web"), autoscalingv2.ScaledToZero).Status == corev1.ConditionTrue, nil
	})
	hpaHoldReplicas(t, ns, "web", 0, 3*time.Second)
	if n := nodeCountOf(t, group); n != 0 {
		t.Fatalf("%d nodes in %s before any replica, want 0", n, group)
	}

	activation := time.Now()
	sim.Set(ns+"/queue", metrics.Constant(30)) // asks for 3 replicas: activation writes 1 first
	var podsAtRequest int
	poll(t, 30*time.Second, "the node group's scale-up request", func(ctx context.Context) (bool, error) {
		n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_scale_ups_total{node_group=%q}`, group))
		if n > 0 {
			pods, perr := cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if perr == nil {
				podsAtRequest = len(pods.Items)
			}
		}
		return n > 0, err
	})
	toRequest := time.Since(activation)
	// The scale-up is planned for the autoscaler's replicas by
	// provision-ahead: the node loop names the autoscaler.
	hpaWaitEvent(t, ns, "TriggeredScaleUp", ": node group "+group+" 0->1 (max: 2)")
	poll(t, 60*time.Second, "the first replica Ready", func(ctx context.Context) (bool, error) {
		d, err := cluster.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas >= 1, err
	})
	toReady := time.Since(activation)
	hpaWaitReplicas(t, ns, "web", 3, 30*time.Second)
	t.Logf("activation to the node group's scale-up request %v (%d pods of web existed then), to the first replica Ready %v",
		toRequest.Round(time.Millisecond), podsAtRequest, toReady.Round(time.Millisecond))

	sim.Set(ns+"/queue", metrics.Constant(1)) // below the threshold: back to zero
	hpaWaitReplicas(t, ns, "web", 0, 30*time.Second)
	poll(t, 90*time.Second, "the emptied node removed", func(ctx context.Context) (bool, error) {
		n, err := groupNodes(ctx, group)
		return len(n) == 0, err
	})
	hpaWaitEvent(t, ns, "SuccessfulRescale", "New size: 0; reason: All activation metrics at or below their activation thresholds")
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal stopped with %v", err)
	}
}

// zeroAutoscaler scales web from zero on the External metric queue (10 per
// replica, activation above 2), down without a stabilization window.
func zeroAutoscaler(ns string) *v1alpha1.PodAutoscaler {
	return &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](0), MaxReplicas: 4,
			Metrics: []v1alpha1.MetricSpec{{
				MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(10, resource.DecimalSI)}}},
				ActivationThreshold: resource.NewQuantity(2, resource.DecimalSI),
			}},
			Behavior: &v1alpha1.Behavior{
				ScaleUp:   &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
				ScaleDown: &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
			},
		},
	}
}
