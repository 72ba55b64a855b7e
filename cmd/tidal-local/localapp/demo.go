package localapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// The demo's workload: web, on a Pods metric of requests per second, 10 per
// replica; the load steps from demoBaseLoad to demoPeakLoad, then declines
// to demoMiddleLoad, holds, and declines back to demoBaseLoad.
const (
	demoApp        = "web"
	demoMetric     = "requests_per_second"
	demoPerReplica = 10
	// demoBaseLoad is 18, not 20: at 20 requests/s over 3 replicas each
	// reports 6.667 (rounded up to the milli-unit), and 3 x 6.667 / 10 is
	// above 2, so a scale-in passing through 3 replicas would stay there.
	demoBaseLoad   = 18
	demoPeakLoad   = 100
	demoMaxReplica = 20
	// demoHold is how long the load stays at its base before the step, and
	// at its peak once every replica is Ready.
	demoHold = 5 * time.Second
	// demoTimeout bounds each wait of a pass.
	demoTimeout = 3 * time.Minute
)

// demoPass is one run of the load curve against a fresh namespace, with
// tidal (started by the caller) provisioning ahead or not, setting
// deletion costs or not.
type demoPass struct {
	client kubernetes.Interface
	sim    *metrics.Simulated
	tl     *timeline
	// scaleUps reads tidal's count of node-group scale-ups.
	scaleUps func() (float64, error)
	// evictions reads tidal's count of pods evicted by scale-down.
	evictions func() (float64, error)
	ns        string
	settings  passSettings
	// stabilization is the demo autoscaler's scale-down stabilization.
	stabilization time.Duration
	// plateauHold is how long the load stays at demoMiddleLoad.
	plateauHold time.Duration
	// prices are the pools' prices per node-hour (pools without one are
	// left out).
	prices map[string]float64
}

// passResult is what the summary shows of a pass.
type passResult struct {
	title string
	// stepToScaleUp: load step to the node group's scale-up request;
	// stepToReady: to every new replica Ready.
	stepToScaleUp, stepToReady time.Duration
	// longestWait and totalWait: pods' waits for a node after the step.
	longestWait, totalWait time.Duration
	// fallToReplicas: first fall of the load to replicas back at the base
	// count; fallToNodes: to the nodes back at their count before the pass.
	fallToReplicas, fallToNodes time.Duration
	// plateauNodes: nodes at the end of the plateau at demoMiddleLoad.
	plateauNodes int
	nodeHours    map[string]float64
	// endCost: what the nodes cost per hour at the end of the pass, -1
	// when not known (a pool without pricePerHour).
	endCost float64
	// evictions: pods scale-down evicted during the pass; -1 when tidal's
	// count could not be read.
	evictions float64
	// failed says what did not happen in time, if anything did not.
	failed string
}

func (d *demoPass) key() string { return d.ns + "/" + demoMetric }

// play runs the load curve. Errors end the pass; a wait that times out is
// recorded in the result, so the summary shows how far the pass got.
func (d *demoPass) play(ctx context.Context) (res passResult, err error) {
	res.title = d.settings.title
	// The recorder's informers end with the pass.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	rec, err := d.setUp(ctx)
	if err != nil {
		return res, err
	}
	baseNodes, err := nodeCount(ctx, d.client)
	if err != nil {
		return res, err
	}
	defer func() {
		res.nodeHours = rec.nodeHours(start, time.Now())
		res.endCost = -1
		if c, ok := costPerHour(rec.nodesNow(), d.prices); ok {
			res.endCost = c
		}
	}()
	evictedBefore, evErr := d.evictions()
	defer func() {
		evictedAfter, err := d.evictions()
		res.evictions = evictedAfter - evictedBefore
		if evErr != nil || err != nil {
			res.evictions = -1
		}
	}()
	if err := d.rise(ctx, rec, &res); err != nil {
		return res, err
	}
	return res, d.fall(ctx, baseNodes, &res)
}

// setUp creates the namespace, the Deployment and its autoscaler at the base
// load, waits for the base replicas, and starts recording.
func (d *demoPass) setUp(ctx context.Context) (*demoRecorder, error) {
	if _, err := d.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("demo: create namespace %s: %w", d.ns, err)
	}
	rec, err := startDemoRecorder(ctx, d.client, d.ns)
	if err != nil {
		return nil, err
	}
	pool, err := d.firstPool(ctx)
	if err != nil {
		return nil, err
	}
	base := replicasFor(demoBaseLoad)
	if _, err := d.client.AppsV1().Deployments(d.ns).Create(ctx, demoDeployment(d.ns, pool, base), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("demo: create deployment: %w", err)
	}
	if err := d.waitReady(ctx, base); err != nil {
		return nil, d.timedOut(ctx, &passResult{}, "base replicas not Ready", err)
	}
	d.sim.Set(d.key(), metrics.Constant(demoBaseLoad))
	if _, err := d.client.AutoscalingV2().HorizontalPodAutoscalers(d.ns).Create(ctx, demoAutoscaler(d.ns, base, d.stabilization), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("demo: create autoscaler: %w", err)
	}
	d.tl.note("%s: %s/%s on pool %s, %d replicas of 1 CPU at %d requests/s (HorizontalPodAutoscaler: %d per replica); provision-ahead=%v, scale-in-deletion-cost=%v",
		d.label(), d.ns, demoApp, pool, base, demoBaseLoad, demoPerReplica, d.settings.ahead, d.settings.cost)
	if err := sleepCtx(ctx, demoHold); err != nil {
		return nil, err
	}
	return rec, nil
}

// firstPool waits for a Ready node and returns its pool. The demo's pods
// stay on that pool, so that both passes make the same choices and end on
// the same nodes.
func (d *demoPass) firstPool(ctx context.Context) (string, error) {
	var pool string
	err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		nodes, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if p := n.Labels[local.NodeGroupLabel]; p != "" && core.IsNodeReady(n) {
				pool = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", d.timedOut(ctx, &passResult{}, "no Ready node of a node group", err)
	}
	return pool, nil
}

func (d *demoPass) label() string { return "demo (" + d.settings.title + ")" }

// rise steps the load up and measures how fast nodes are asked for and
// every replica is Ready.
func (d *demoPass) rise(ctx context.Context, rec *demoRecorder, res *passResult) error {
	before, err := d.scaleUps()
	if err != nil {
		return fmt.Errorf("demo: read tidal's metrics: %w", err)
	}
	peak := replicasFor(demoPeakLoad)
	step := time.Now()
	d.tl.note("%s: load steps %d -> %d requests/s: %d replicas wanted, more than the nodes hold", d.label(), demoBaseLoad, demoPeakLoad, peak)
	d.sim.Set(d.key(), metrics.Constant(demoPeakLoad))
	err = poll(ctx, 20*time.Millisecond, func(context.Context) (bool, error) {
		n, err := d.scaleUps()
		return err == nil && n > before, nil
	})
	if err != nil {
		return d.timedOut(ctx, res, "no node group scale-up", err)
	}
	res.stepToScaleUp = time.Since(step)
	if err := d.waitReady(ctx, peak); err != nil {
		return d.timedOut(ctx, res, "replicas not Ready", err)
	}
	res.stepToReady = time.Since(step)
	res.longestWait, res.totalWait = rec.podWaits(step)
	d.tl.note("%s: scale-up asked for %s after the step; all %d replicas Ready after %s", d.label(),
		seconds(res.stepToScaleUp), peak, seconds(res.stepToReady))
	return sleepCtx(ctx, demoHold)
}

// fall lowers the load from the peak to the plateau and then to its base,
// and measures how fast replicas and nodes follow.
func (d *demoPass) fall(ctx context.Context, baseNodes int, res *passResult) error {
	base := replicasFor(demoBaseLoad)
	fall := time.Now()
	if err := d.plateau(ctx, res); err != nil {
		return err
	}
	d.tl.note("%s: load falls from %d to %d requests/s, %d every %s", d.label(), demoMiddleLoad, demoBaseLoad,
		demoPerReplica, demoRampStep)
	if err := d.ramp(ctx, demoMiddleLoad, demoBaseLoad); err != nil {
		return err
	}
	if err := d.waitReplicas(ctx, base); err != nil {
		return d.timedOut(ctx, res, "replicas not scaled down", err)
	}
	res.fallToReplicas = time.Since(fall)
	err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		n, err := nodeCount(ctx, d.client)
		return err == nil && n <= baseNodes, nil
	})
	if err != nil {
		return d.timedOut(ctx, res, "added nodes not removed", err)
	}
	res.fallToNodes = time.Since(fall)
	d.tl.note("%s: replicas back to %d after %s, nodes back to %d after %s", d.label(), base,
		seconds(res.fallToReplicas), baseNodes, seconds(res.fallToNodes))
	return nil
}

// timedOut records a wait that did not end in time; when the demo itself
// was stopped, its context's error is returned instead.
func (d *demoPass) timedOut(ctx context.Context, res *passResult, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("demo: %s: %w", what, err)
	}
	res.failed = fmt.Sprintf("%s within %v", what, demoTimeout)
	return fmt.Errorf("demo: %s", res.failed)
}

// tearDown deletes the namespace and waits for its pods to go, so the next
// pass starts from the same nodes.
func (d *demoPass) tearDown(ctx context.Context) error {
	d.sim.Set(d.key(), nil)
	err := d.client.CoreV1().Namespaces().Delete(ctx, d.ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("demo: delete namespace %s: %w", d.ns, err)
	}
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		pods, err := d.client.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
}

func (d *demoPass) waitReady(ctx context.Context, want int32) error {
	return poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		dep, err := d.client.AppsV1().Deployments(d.ns).Get(ctx, demoApp, metav1.GetOptions{})
		return err == nil && dep.Status.ReadyReplicas >= want && dep.Status.UpdatedReplicas >= want, nil
	})
}

// poll checks cond every interval for at most demoTimeout.
func poll(ctx context.Context, interval time.Duration, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, interval, true, cond)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func nodeCount(ctx context.Context, client kubernetes.Interface) (int, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("demo: list nodes: %w", err)
	}
	return len(nodes.Items), nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func demoDeployment(ns, pool string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": demoApp}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{local.NodeGroupLabel: pool}, Containers: []corev1.Container{{
					Name: "web", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
					}},
				}}},
			},
		},
	}
}

// demoAutoscaler is an autoscaling/v2 HorizontalPodAutoscaler of web on
// requests per second per replica. Its behavior lets a step up happen at
// once, and scale-down wait the stabilization window.
func demoAutoscaler(ns string, minReplicas int32, stabilization time.Duration) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: demoApp},
			MinReplicas:    ptr.To(minReplicas), MaxReplicas: demoMaxReplica,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: demoMetric},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType,
						AverageValue: resource.NewQuantity(demoPerReplica, resource.DecimalSI)}},
			}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: demoMaxReplica, PeriodSeconds: 15}}},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(stabilization.Seconds()))},
			},
		},
	}
}
