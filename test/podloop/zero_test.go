package podloop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
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
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
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
// provision-ahead plans that replica's node before its pod exists: a
// ResourceQuota holds the pod back until the node group's scale-up has been
// requested. When the metric falls back to its threshold the Deployment
// goes back to zero, and the emptied node goes too.
func TestScaleToZeroAndBack(t *testing.T) {
	parallel(t)
	const group = "zr-pool"
	tl, sim, ns := startOnEmptyGroup(t, group, 2, "--provision-ahead=true",
		"--scale-down-unneeded-time=2s", "--scale-down-delay-after-add=10s", "--scale-down-delay-after-delete=0s")
	webOn(t, ns, group, 0, "900m", "1Gi")
	sim.Set(ns+"/queue", metrics.Constant(2)) // at the threshold: idle
	hpaCreatePA(t, zeroAutoscaler(ns))
	poll(t, 30*time.Second, "ScaledToZero True", func(context.Context) (bool, error) {
		return hpaCondition(hpaGetPA(t, ns, "web"), autoscalingv2.ScaledToZero).Status == corev1.ConditionTrue, nil
	})
	hpaHoldReplicas(t, ns, "web", 0, 3*time.Second)
	if n := nodeCountOf(t, group); n != 0 {
		t.Fatalf("%d nodes in %s before any replica, want 0", n, group)
	}
	holdPods(t, ns)

	activation := time.Now()
	sim.Set(ns+"/queue", metrics.Constant(30)) // asks for 3 replicas: activation writes 1 first
	hpaWaitReplicas(t, ns, "web", 1, 30*time.Second)
	poll(t, 30*time.Second, "the node group's scale-up request", func(context.Context) (bool, error) {
		n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_scale_ups_total{node_group=%q}`, group))
		return n > 0, err
	})
	t.Logf("activation to the node group's scale-up request: %v", time.Since(activation).Round(time.Millisecond))
	if pods, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods of web while the quota holds them: %v (err %v)", len(pods.Items), err)
	}
	hpaWaitEvent(t, ns, "TriggeredScaleUp", "planned ahead of their pods: node group "+group+" 0->1 (max: 2)")

	releasePods(t, ns)
	poll(t, 60*time.Second, "the first replica Ready", func(ctx context.Context) (bool, error) {
		d, err := cluster(t).Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas >= 1, err
	})
	hpaWaitReplicas(t, ns, "web", 3, 30*time.Second)
	if n := nodeCountOf(t, group); n != 1 {
		t.Fatalf("%d nodes for 3 replicas of 0.9 CPU on 4-CPU nodes, want 1", n)
	}

	sim.Set(ns+"/queue", metrics.Constant(1)) // below the threshold: back to zero
	hpaWaitReplicas(t, ns, "web", 0, 30*time.Second)
	hpaWaitEvent(t, ns, "SuccessfulRescale", "New size: 0; reason: All activation metrics at or below their activation thresholds")
	poll(t, 90*time.Second, "the emptied node removed", func(ctx context.Context) (bool, error) {
		n, err := groupNodes(t, ctx, group)
		return len(n) == 0, err
	})
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal stopped with %v", err)
	}
}

// startOnEmptyGroup starts tidal (simulated metrics, 2 s periods, plus
// args) on a node group of its own at zero nodes, and returns it with its
// metric source and a new namespace.
func startOnEmptyGroup(t *testing.T, group string, maxSize int, args ...string) (*tidal, *metrics.Simulated, string) {
	t.Helper()
	hpaInstallCRD(t)
	deleteNodesOnCleanup(t, group+"-")
	ns := hpaNamespace(t)
	sim := metrics.NewSimulated()
	groups := fmt.Sprintf("nodeGroups:\n- {name: %s, minSize: 0, maxSize: %d, initialSize: 0, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 2s}\n", group, maxSize)
	runCtx := testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity)
	tl := testenv.StartTidalWith(runCtx, t, cluster(t).KubeconfigPath, []app.Option{app.WithSimulatedMetrics(sim)},
		append([]string{"--leader-elect=false", "--local-node-groups=" + writeGroups(t, groups), "--scan-interval=2s",
			"--hpa-metrics-source=simulated", "--hpa-sync-period=2s"}, args...)...)
	return tl, sim, ns
}

// webOn creates the Deployment web of n replicas on the node group.
func webOn(t *testing.T, ns, group string, n int32, cpu, mem string) {
	t.Helper()
	web := deployment(ns, "web", n, cpu, mem)
	web.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: group}
	create(t, cluster(t).Client.AppsV1().Deployments(ns).Create, web)
}

// holdPods makes the API server refuse new pods in ns: a ResourceQuota of
// no pods, whose status (the local cluster runs no quota controller) the
// test writes itself. It returns once a probe pod is refused.
func holdPods(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	quotas := cluster(t).Client.CoreV1().ResourceQuotas(ns)
	zero := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "hold"},
		Spec: corev1.ResourceQuotaSpec{Hard: zero}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: zero, Used: zero}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "new pods refused by the quota", func(ctx context.Context) (bool, error) {
		err := createProbe(t, ctx, ns)
		return apierrors.IsForbidden(err), nil
	})
}

// releasePods deletes the quota, waits until a probe pod is admitted, and
// has the ReplicaSet controller look at web's ReplicaSet again (it backs off
// after refused creations).
func releasePods(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := cluster(t).Client.CoreV1().ResourceQuotas(ns).Delete(ctx, "hold", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "new pods admitted", func(ctx context.Context) (bool, error) {
		return createProbe(t, ctx, ns) == nil, nil
	})
	rss, err := cluster(t).Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	// The ReplicaSet controller writes them too: read, change, write, and
	// again on a conflict, as a client does.
	for _, item := range rss.Items {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			rs, err := cluster(t).Client.AppsV1().ReplicaSets(ns).Get(ctx, item.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&rs.ObjectMeta, "test.tidal.dev/released", "true")
			_, err = cluster(t).Client.AppsV1().ReplicaSets(ns).Update(ctx, rs, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("release the pods of ReplicaSet %s: %v", item.Name, err)
		}
	}
}

// createProbe creates a pod, to learn whether the API server admits pods
// in ns, and deletes it at once when it was admitted (it selects no node
// group, so nothing runs it meanwhile).
func createProbe(t testing.TB, ctx context.Context, ns string) error {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{local.NodeGroupLabel: "none"},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	pods := cluster(t).Client.CoreV1().Pods(ns)
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if err := pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		return fmt.Errorf("delete probe pod %s: %w", created.Name, err)
	}
	return nil
}

// zeroAutoscaler scales web from zero on the External metric queue (an
// AverageValue target: 10 per replica; activation above 2), down without a
// stabilization window.
func zeroAutoscaler(ns string) *v1alpha1.PodAutoscaler {
	return &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](0), MaxReplicas: 4,
			Metrics: []v1alpha1.MetricSpec{{
				MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)}}},
				ActivationThreshold: resource.NewQuantity(2, resource.DecimalSI),
			}},
			Behavior: &v1alpha1.Behavior{
				ScaleUp:   &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
				ScaleDown: &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
			},
		},
	}
}
