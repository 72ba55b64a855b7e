package localapp

import (
	"context"
	"fmt"
	"io"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/deploy/crd"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// The scale-to-zero phase: after the provision-ahead passes, two
// Deployments at zero replicas under PodAutoscalers with minReplicas 0 are
// activated by an External metric, one on a pool that has a node with room
// (warm) and one on a pool at zero nodes (cold). Each measures the time
// from the metric crossing its activation threshold to the first replica
// Ready.
const (
	zeroNamespace = "demo-zero"
	zeroMetric    = "queue"
	zeroWarmPool  = "general-a"
	zeroColdPool  = "general-b"
)

// zeroResult is one activation's measurement.
type zeroResult struct {
	name, pool string
	// poolNodes is how many nodes the pool had at the activation.
	poolNodes int
	toReady   time.Duration
	failed    string
}

// zeroDemo runs the phase against a fresh run of tidal (PodAutoscalers,
// provision-ahead on).
type zeroDemo struct {
	config *rest.Config
	pass   *demoPass
	opts   config.Options
}

// playZeroDemo runs the scale-to-zero phase and prints its summary lines.
// It returns tidal's error, if it failed.
func playZeroDemo(ctx context.Context, client kubernetes.Interface, cfg *rest.Config, opts config.Options, sim *metrics.Simulated, tl *timeline, out io.Writer) error {
	opts.HPA.HPAObjects, opts.ScaleUp.ProvisionAhead = false, true
	z := &zeroDemo{config: cfg, opts: opts}
	z.pass = &demoPass{client: client, sim: sim, tl: tl, ns: zeroNamespace, settings: passSettings{ahead: true, cost: true, title: "scale to zero"}}
	if err := installPodAutoscalerCRD(ctx, cfg); err != nil {
		tl.note("demo (scale to zero): %v", err)
		return nil
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx, &z.opts, app.WithSimulatedMetrics(sim)) }()
	results := z.activations(ctx)
	stop()
	runErr := <-done
	printZeroSummary(out, results)
	return runErr
}

// activations sets the phase up and activates the warm, then the cold
// Deployment.
func (z *zeroDemo) activations(ctx context.Context) []zeroResult {
	d := z.pass
	defer func() {
		for _, name := range []string{"warm", "cold"} {
			d.sim.Set(metrics.SimulatedKey(zeroNamespace, name, zeroMetric), nil)
		}
		if err := d.tearDown(ctx); err != nil && ctx.Err() == nil {
			d.tl.note("demo (scale to zero): clean-up: %v", err)
		}
	}()
	if _, err := d.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: zeroNamespace}}, metav1.CreateOptions{}); err != nil {
		d.tl.note("demo (scale to zero): %v", err)
		return nil
	}
	var out []zeroResult
	for _, w := range []struct{ name, pool string }{{"warm", zeroWarmPool}, {"cold", zeroColdPool}} {
		out = append(out, z.activate(ctx, w.name, w.pool))
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// activate creates a Deployment at zero and its autoscaler, waits for the
// autoscaler to hold it at zero, then raises the metric above the
// activation threshold and measures until the first replica is Ready.
func (z *zeroDemo) activate(ctx context.Context, name, pool string) zeroResult {
	d, res := z.pass, zeroResult{name: name, pool: pool}
	key := metrics.SimulatedKey(zeroNamespace, name, zeroMetric)
	d.sim.Set(key, metrics.Constant(0))
	dep := demoDeployment(zeroNamespace, pool, 0)
	dep.Name, dep.Spec.Selector.MatchLabels["app"], dep.Spec.Template.Labels["app"] = name, name, name
	if _, err := d.client.AppsV1().Deployments(zeroNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		res.failed = err.Error()
		return res
	}
	pas, err := v1alpha1.NewForConfig(z.config)
	if err == nil {
		_, err = pas.PodAutoscalers(zeroNamespace).Create(ctx, zeroAutoscaler(name), metav1.CreateOptions{})
	}
	if err != nil {
		res.failed = fmt.Sprintf("create autoscaler: %v", err)
		return res
	}
	if err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		pa, err := pas.PodAutoscalers(zeroNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && zeroHeld(pa), nil
	}); err != nil {
		res.failed = "autoscaler never held the workload at zero"
		return res
	}
	res.poolNodes, _ = poolNodeCount(ctx, d, pool)
	start := time.Now()
	d.tl.note("demo (scale to zero): %s/%s at zero on pool %s (%d nodes); the queue goes above its activation threshold", zeroNamespace, name, pool, res.poolNodes)
	d.sim.Set(key, metrics.Constant(5))
	if err := poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
		dep, err := d.client.AppsV1().Deployments(zeroNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && dep.Status.ReadyReplicas >= 1, nil
	}); err != nil {
		res.failed = fmt.Sprintf("first replica not Ready within %v", demoTimeout)
		return res
	}
	res.toReady = time.Since(start)
	d.tl.note("demo (scale to zero): %s's first replica Ready %s after the activation", name, seconds(res.toReady))
	return res
}

// zeroHeld tells whether the autoscaler reports its workload held at zero.
func zeroHeld(pa *v1alpha1.PodAutoscaler) bool {
	for _, c := range pa.Status.Conditions {
		if c.Type == autoscalingv2.ScaledToZero && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// zeroAutoscaler scales a Deployment from zero on the External metric
// queue: 10 per replica, active above 1.
func zeroAutoscaler(name string) *v1alpha1.PodAutoscaler {
	return &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: zeroNamespace, Name: name},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](0), MaxReplicas: 4,
			Metrics: []v1alpha1.MetricSpec{{
				MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: zeroMetric},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(10, resource.DecimalSI)}}},
				ActivationThreshold: resource.NewQuantity(1, resource.DecimalSI),
			}},
		},
	}
}

// poolNodeCount counts a pool's nodes.
func poolNodeCount(ctx context.Context, d *demoPass, pool string) (int, error) {
	nodes, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: local.NodeGroupLabel + "=" + pool})
	if err != nil {
		return 0, err
	}
	return len(nodes.Items), nil
}

// installPodAutoscalerCRD creates the PodAutoscaler CRD (tidal-local's
// cluster starts without it) and waits until it is served.
func installPodAutoscalerCRD(ctx context.Context, cfg *rest.Config) error {
	obj := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crd.PodAutoscalers, obj); err != nil {
		return fmt.Errorf("read the PodAutoscaler CRD: %w", err)
	}
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("install the PodAutoscaler CRD: %w", err)
	}
	pas, err := v1alpha1.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := pas.PodAutoscalers(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("PodAutoscalers not served: %w", err)
	}
	return nil
}

// printZeroSummary prints the phase's lines after the passes' table.
func printZeroSummary(out io.Writer, results []zeroResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(out, "\nScale to zero (PodAutoscaler minReplicas 0, External metric activation, provision-ahead on); measured in this run:\n")
	for _, r := range results {
		what := map[string]string{"warm": "a node with room already present", "cold": "no node present"}[r.name]
		if r.failed != "" {
			fmt.Fprintf(out, "  activation -> first replica Ready, %s (pool %s, nodes at activation: %d): incomplete: %s\n", what, r.pool, r.poolNodes, r.failed)
			continue
		}
		fmt.Fprintf(out, "  activation -> first replica Ready, %s (pool %s, nodes at activation: %d): %s\n", what, r.pool, r.poolNodes, seconds(r.toReady))
	}
}
