package localapp

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// The consolidation phase: a batch of two high-memory pods brings two
// 8-CPU nodes of consolidationBigPool; web and api (2 CPU each, one
// replica per node) land beside them, since a 3-CPU cache fills the base
// node of consolidationSmallPool. When the batch ends each 8-CPU node is
// half full, and neither node's pods fit elsewhere: scale-down keeps both.
// The phase runs twice, without and with --consolidation-replace, and
// measures what the nodes cost per hour at the end of each.
const (
	consolidationBigPool   = "highmem-a"
	consolidationSmallPool = "general-a"
	// consolidationHold is how long the run without replacement waits
	// after the batch ended: several times scale-down's unneeded time.
	consolidationHold = 30 * time.Second
)

// consolidationResult is one run's measurement.
type consolidationResult struct {
	replace bool
	// nodes are the nodes per pool at the end, cost what they cost per
	// hour (-1: a pool without a price), after the time from the batch's
	// end to the measurement.
	nodes  map[string]int
	cost   float64
	after  time.Duration
	failed string
}

// consolidationDemo runs the phase's two runs.
type consolidationDemo struct {
	client kubernetes.Interface
	opts   config.Options
	sim    *metrics.Simulated
	tl     *timeline
	prices map[string]float64
}

// playConsolidationDemo runs the phase, without and then with replacement,
// and prints its summary lines. It returns tidal's error, if it failed.
func playConsolidationDemo(ctx context.Context, c *consolidationDemo, out io.Writer) error {
	if _, big := c.prices[consolidationBigPool]; !big {
		c.tl.note("demo (consolidation): skipped, no priced pool %s (custom --local-node-groups)", consolidationBigPool)
		return nil
	}
	if _, small := c.prices[consolidationSmallPool]; !small {
		c.tl.note("demo (consolidation): skipped, no priced pool %s (custom --local-node-groups)", consolidationSmallPool)
		return nil
	}
	var results []consolidationResult
	for _, replace := range []bool{false, true} {
		res, err := c.run(ctx, replace)
		results = append(results, res)
		if err != nil || ctx.Err() != nil {
			printConsolidationSummary(out, results, c.prices)
			return err
		}
	}
	printConsolidationSummary(out, results, c.prices)
	return nil
}

// run plays the phase against a fresh run of tidal with replacement on or
// off.
func (c *consolidationDemo) run(ctx context.Context, replace bool) (consolidationResult, error) {
	opts := c.opts
	opts.Consolidation.Replace = replace
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx, &opts, app.WithSimulatedMetrics(c.sim)) }()
	ns := "demo-consolidation-off"
	if replace {
		ns = "demo-consolidation-on"
	}
	p := &demoPass{client: c.client, sim: c.sim, tl: c.tl, ns: ns, settings: passSettings{title: "consolidation"}}
	res := c.play(ctx, p, replace)
	if res.failed != "" && ctx.Err() == nil {
		c.tl.note("demo (consolidation, replace=%v) stopped: %s", replace, res.failed)
	}
	stop()
	return res, <-done
}

// play sets the phase up, ends the batch and measures; it then deletes the
// namespace and waits for the nodes to come back to their count before.
func (c *consolidationDemo) play(ctx context.Context, p *demoPass, replace bool) (res consolidationResult) {
	res.replace, res.cost = replace, -1
	// Nodes the phases before left empty (a node of another pool with
	// room would take a half-full node's pods) go through scale-down
	// first.
	if err := c.onlySmallPool(ctx); err != nil {
		res.failed = fmt.Sprintf("the nodes not down to one of %s within %v", consolidationSmallPool, demoTimeout)
		return res
	}
	defer func() {
		if err := p.tearDown(ctx); err != nil && ctx.Err() == nil {
			c.tl.note("demo (consolidation): clean-up: %v", err)
		}
	}()
	end, err := c.fragment(ctx, p)
	if err != nil {
		res.failed = err.Error()
		return res
	}
	if replace {
		err = poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
			n, err := poolNodeCount(ctx, p, consolidationBigPool)
			return err == nil && n == 0, nil
		})
		if err != nil {
			res.failed = fmt.Sprintf("the %s nodes not replaced within %v", consolidationBigPool, demoTimeout)
		}
	} else if err := sleepCtx(ctx, consolidationHold); err != nil {
		res.failed = err.Error()
		return res
	}
	res.after = time.Since(end)
	if res.nodes, err = poolCounts(ctx, c.client); err != nil {
		res.failed = err.Error()
		return res
	}
	if cost, ok := costPerHour(res.nodes, c.prices); ok {
		res.cost = cost
	}
	c.tl.note("demo (consolidation, replace=%v): %s after the batch ended: nodes %v, %.2f per hour", replace, seconds(res.after), res.nodes, res.cost)
	return res
}

// fragment creates the cache, the batch, web and api, waits for them to
// run, and ends the batch; it returns when the batch ended.
func (c *consolidationDemo) fragment(ctx context.Context, p *demoPass) (time.Time, error) {
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.ns}}, metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("create namespace %s: %w", p.ns, err)
	}
	cache := consolidationDeployment(p.ns, "cache", 1, "3", "1Gi")
	cache.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: consolidationSmallPool}
	batch := consolidationDeployment(p.ns, "batch", 2, "4", "40Gi")
	steps := []*appsv1.Deployment{cache, batch,
		consolidationDeployment(p.ns, "web", 2, "2", "1Gi"), consolidationDeployment(p.ns, "api", 2, "2", "1Gi")}
	for _, d := range steps {
		if _, err := c.client.AppsV1().Deployments(p.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return time.Time{}, fmt.Errorf("create deployment %s: %w", d.Name, err)
		}
		if err := waitDeploymentReady(ctx, c.client, p.ns, d.Name, *d.Spec.Replicas); err != nil {
			return time.Time{}, fmt.Errorf("%s not Ready within %v", d.Name, demoTimeout)
		}
	}
	big, _ := poolNodeCount(ctx, p, consolidationBigPool)
	c.tl.note("demo (consolidation): a batch runs on %d %s node(s), web and api beside it; the batch ends", big, consolidationBigPool)
	_, err := c.client.AppsV1().Deployments(p.ns).Patch(ctx, "batch", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("end the batch: %w", err)
	}
	return time.Now(), nil
}

// onlySmallPool waits until the one node left is the base node of
// consolidationSmallPool.
func (c *consolidationDemo) onlySmallPool(ctx context.Context) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		pools, err := poolCounts(ctx, c.client)
		return err == nil && len(pools) == 1 && pools[consolidationSmallPool] == 1, nil
	})
}

func waitDeploymentReady(ctx context.Context, client kubernetes.Interface, ns, name string, want int32) error {
	return poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		dep, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && dep.Status.ReadyReplicas >= want, nil
	})
}

// consolidationDeployment is the demo's Deployment named name, on any
// pool, with the requests, one replica per node (required anti-affinity on
// its own pods).
func consolidationDeployment(ns, name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	d := demoDeployment(ns, "", replicas)
	d.Name, d.Spec.Selector.MatchLabels["app"], d.Spec.Template.Labels["app"] = name, name, name
	spec := &d.Spec.Template.Spec
	spec.NodeSelector = nil
	spec.Containers[0].Name = name
	spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, TopologyKey: corev1.LabelHostname}}}}
	return d
}

// poolCounts counts the nodes of each pool.
func poolCounts(ctx context.Context, client kubernetes.Interface) (map[string]int, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := map[string]int{}
	for _, n := range nodes.Items {
		out[n.Labels[local.NodeGroupLabel]]++
	}
	return out, nil
}

// printConsolidationSummary prints the phase's lines after the passes'
// table: the cost per hour at the end without and with consolidation.
func printConsolidationSummary(out io.Writer, results []consolidationResult, prices map[string]float64) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(out, "\nConsolidation (a batch on two 8-CPU %s nodes at %.2f/h ends, leaving each half full with one web and one api pod of 2 CPU; 4-CPU %s nodes at %.2f/h); measured in this run:\n",
		consolidationBigPool, prices[consolidationBigPool], consolidationSmallPool, prices[consolidationSmallPool])
	for _, r := range results {
		what := "without consolidation"
		if r.replace {
			what = "with consolidation (--consolidation-replace)"
		}
		cost := "-"
		if r.cost >= 0 {
			cost = fmt.Sprintf("%.2f", r.cost)
		}
		var pools []string
		for _, p := range slices.Sorted(maps.Keys(r.nodes)) {
			pools = append(pools, fmt.Sprintf("%s %d", p, r.nodes[p]))
		}
		line := fmt.Sprintf("  cost per hour at the end, %s: %s (nodes: %s; %s after the batch ended)", what, cost, strings.Join(pools, ", "), seconds(r.after))
		if r.failed != "" {
			line += "; incomplete: " + r.failed
		}
		fmt.Fprintln(out, line)
	}
}
