package integration

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// The random mixes on the real scheduler: two groups of 4 CPU / 16 GiB
// nodes in two zones, no node yet, and 5 to 8 Deployments of 1 to 5
// replicas asking for 100m to 3 CPU and 128Mi to 12Gi; about 30 % pinned
// to a zone, 25 % with hostname anti-affinity among their replicas and 25 %
// spread over the zones (ScheduleAnyway: the scheduler's scoring weighs
// it, the exact packing need not). The shapes of core/scaleup's mixes,
// drawn afresh.
const (
	realMixNodeCPU = 4000
	realMixNodeMiB = 16 * 1024
	// realMixRunLabel keeps a run's pods to its own nodes: a cluster runs
	// the seeds one after another.
	realMixRunLabel = "mix-run"
)

var realMixZones = []string{"zone-a", "zone-b"}

// realMix is one seed's Deployments, and their pods as items of the exact
// packing.
type realMix struct {
	deployments []*appsv1.Deployment
	items       []simtest.Item
}

func newRealMix(ns, run string, seed uint64) realMix {
	r := rand.New(rand.NewPCG(seed, 13))
	var m realMix
	for w := range 5 + r.IntN(4) {
		cpu, mib, replicas := 100*(1+r.IntN(30)), 128*(1+r.IntN(96)), 1+r.IntN(5)
		zone, anti := -1, -1
		if r.Float64() < 0.3 {
			zone = r.IntN(len(realMixZones))
		}
		if r.Float64() < 0.25 {
			anti = w
		}
		spread := r.Float64() < 0.25
		app := fmt.Sprintf("app-%d", w)
		d := deployment(ns, app, int32(replicas), fmt.Sprintf("%dm", cpu), fmt.Sprintf("%dMi", mib))
		shapeMixPods(&d.Spec.Template.Spec, app, run, zone, anti >= 0, spread)
		m.deployments = append(m.deployments, d)
		for range replicas {
			m.items = append(m.items, simtest.Item{CPU: int64(cpu), Mem: int64(mib), Zone: zone, Anti: anti, Workload: w})
		}
	}
	return m
}

// shapeMixPods keeps a workload's pods to the run's nodes and adds its
// zone, anti-affinity and spread.
func shapeMixPods(spec *corev1.PodSpec, app, run string, zone int, anti, spread bool) {
	spec.NodeSelector = map[string]string{realMixRunLabel: run}
	if zone >= 0 {
		spec.NodeSelector[corev1.LabelTopologyZone] = realMixZones[zone]
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if anti {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: selector, TopologyKey: corev1.LabelHostname}}}}
	}
	if spread {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector}}
	}
}

// mixMode is how tidal runs: with nominations, or without (as on clusters
// before 1.35 or with another scheduler), asking for the plan's nodes or
// for the scheduler's placement's.
type mixMode struct {
	name  string
	flags []string
}

var (
	mixNominated = mixMode{"nominations", []string{"--nominate-planned-pods=true"}}
	mixPlanOnly  = mixMode{"no-nominations", []string{"--nominate-planned-pods=false"}}
	mixScheduler = mixMode{"no-nominations-scheduler-placement", []string{"--nominate-planned-pods=false", "--scale-up-placement=scheduler"}}
)

// mixFigure is what a run settled on: the exact optimum, the nodes the
// groups have once every pod runs, those of them no pod of the mix runs
// on, and the nodes tidal asked for and removed again (new nodes no plan
// needed any more, --scale-down-unused-new-nodes-enabled): asked for, they
// are not free, and are counted apart.
type mixFigure struct{ optimum, nodes, empty, removed int }

func (f *mixFigure) add(o mixFigure) {
	f.optimum += o.optimum
	f.nodes += o.nodes
	f.empty += o.empty
	f.removed += o.removed
}

// runRealMix creates one seed's mix, unschedulable at first, starts tidal
// in the given mode on two groups of its own, whose nodes register behind
// a startup taint that goes 6 to 9 seconds later (as a node's agents
// start), waits until every pod is bound and every node tidal asked for
// has registered, and counts the nodes.
func runRealMix(t testing.TB, seed uint64, mode mixMode) mixFigure {
	t.Helper()
	cs := cluster(t).Client
	run := fmt.Sprintf("mix%d-%s", seed, initials(mode.name))
	ns := testenv.NewNamespace(t, cs)
	m := newRealMix(ns, run, seed)
	opt, proven := simtest.Optimum(m.items, realMixNodeCPU, realMixNodeMiB, 5_000_000)
	if !proven {
		t.Fatalf("seed %d: the exact search gave up (best %d)", seed, opt)
	}
	for _, d := range m.deployments {
		if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create deployment %s: %v", d.Name, err)
		}
	}
	waitSelectedUnschedulable(t, ns, "", len(m.items))
	groups := mixGroups(t, run)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); releaseStartingNodes(ctx, cs, run) }()
	// The local cloud's simulated kubelets write their nodes through
	// tidal's client: a real tidal's writes do not queue behind heartbeats.
	flags := append(append(append([]string{}, scaleUpFlags...), mode.flags...), "--local-node-groups="+groups,
		"--kube-client-qps=50", "--kube-client-burst=100")
	tl := testenv.StartTidal(context.Background(), t, cluster(t).KubeconfigPath, flags...)
	fig := settleMix(t, cs, tl, ns, run)
	fig.optimum = opt
	if fig.empty > 0 || fig.nodes > opt {
		logMixNodes(t, cs, ns, run)
	}
	stop()
	<-done
	if err := tl.Stop(t); err != nil {
		t.Errorf("stop tidal: %v", err)
	}
	deleteRunNodes(t, cs, run)
	return fig
}

// initials shortens a mode's name for node names.
func initials(name string) string {
	var b strings.Builder
	for _, w := range strings.Split(name, "-") {
		b.WriteByte(w[0])
	}
	return b.String()
}

// mixGroups writes the run's two groups, one per zone, labelled with the
// run, their nodes registering behind nominationStartupTaint.
func mixGroups(t testing.TB, run string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("nodeGroups:\n")
	for _, z := range realMixZones {
		fmt.Fprintf(&b, "- {name: %s-%s, minSize: 0, maxSize: 40, zone: %s, cpu: \"4\", memory: 16Gi, provisioningDelay: 300ms, labels: {%s: %s}, taints: [{key: %q, value: \"true\", effect: NoSchedule}]}\n",
			run, z, z, realMixRunLabel, run, nominationStartupTaint)
	}
	return writeGroups(t, b.String())
}

// startupDelay is how long a node of the run stays behind its startup
// taint: 6 to 9 seconds, by its name, so nodes asked for together come
// one after another.
func startupDelay(name string) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 6*time.Second + time.Duration(h.Sum32()%3000)*time.Millisecond
}

// releaseStartingNodes takes the startup taint off each node of the run
// startupDelay after it was first seen, until ctx ends. A failed write is
// tried again at the next look.
func releaseStartingNodes(ctx context.Context, cs kubernetes.Interface, run string) {
	seen := map[string]time.Time{}
	for ctx.Err() == nil {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: realMixRunLabel + "=" + run})
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if err != nil || !hasTaintKey(n, nominationStartupTaint) {
				continue
			}
			if _, ok := seen[n.Name]; !ok {
				seen[n.Name] = time.Now()
			}
			if time.Since(seen[n.Name]) >= startupDelay(n.Name) {
				_ = untaint(ctx, cs, n.Name, nominationStartupTaint)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func untaint(ctx context.Context, cs kubernetes.Interface, name, key string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// settleMix waits until every pod of ns is bound, every node tidal asked
// for in the run's groups has registered and taken pods if it will, or
// been removed, and counts the nodes, the empty ones and the removed ones.
func settleMix(t testing.TB, cs kubernetes.Interface, tl *tidal, ns, run string) mixFigure {
	t.Helper()
	var fig mixFigure
	testenv.PollProgress(t, 90*time.Second, "every pod of the mix bound, every node asked for registered", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: realMixRunLabel + "=" + run})
		if err != nil {
			return false, "", err
		}
		asked := 0.0
		for _, z := range realMixZones {
			n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_scaled_up_nodes_total{node_group="%s-%s"}`, run, z))
			if err != nil {
				return false, "", err
			}
			asked += n
		}
		removed, err := testenv.MetricSum(tl.Address, "tidal_scaled_down_nodes_total")
		if err != nil {
			return false, "", err
		}
		used, unbound := map[string]bool{}, 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				unbound++
			}
			used[p.Spec.NodeName] = true
		}
		fig = mixFigure{nodes: len(nodes.Items), removed: int(removed)}
		starting := 0
		for i := range nodes.Items {
			if hasTaintKey(&nodes.Items[i], nominationStartupTaint) {
				starting++
			}
			if !used[nodes.Items[i].Name] {
				fig.empty++
			}
		}
		progress := fmt.Sprintf("%d pods unbound, %d nodes (%d starting, %d empty), %v asked for, %v removed", unbound, len(nodes.Items), starting, fig.empty, asked, removed)
		return unbound == 0 && starting == 0 && float64(len(nodes.Items)) == asked-removed, progress, nil
	})
	return fig
}

// deleteRunNodes deletes the run's nodes, so the next run's cluster holds
// only its own.
func deleteRunNodes(t testing.TB, cs kubernetes.Interface, run string) {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realMixRunLabel + "=" + run})
	if err != nil {
		t.Fatalf("list the nodes of %s: %v", run, err)
	}
	for _, n := range nodes.Items {
		if err := cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete node %s: %v", n.Name, err)
		}
	}
}

// runRealMixes runs the seeds one after another and sums their figures.
func runRealMixes(t testing.TB, seeds []uint64, mode mixMode) mixFigure {
	var tot mixFigure
	for _, seed := range seeds {
		fig := runRealMix(t, seed, mode)
		t.Logf("%s, seed %d: optimum %d nodes, %d used, %d empty, %d asked for and removed unused", mode.name, seed, fig.optimum, fig.nodes, fig.empty, fig.removed)
		tot.add(fig)
	}
	return tot
}

// BenchmarkRealSchedulerRandomMixes gives the figure on the real
// scheduler (make bench BENCH=BenchmarkRealSchedulerRandomMixes
// PKG=./test/integration BENCHTIME=1x): summed over 8 seeded mixes, the
// exact optimum, the nodes used once every pod runs, those left empty and
// those asked for and removed unused,
// with nominations, without them (the plan's node count), and without them
// asking for the scheduler's placement's count (--scale-up-placement).
// ns/op is one pass over the seeds.
func BenchmarkRealSchedulerRandomMixes(b *testing.B) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	for _, mode := range []mixMode{mixNominated, mixPlanOnly, mixScheduler} {
		b.Run(mode.name, func(b *testing.B) {
			var tot mixFigure
			for range b.N {
				tot = runRealMixes(b, seeds, mode)
			}
			b.ReportMetric(float64(tot.optimum), "optimum-nodes")
			b.ReportMetric(float64(tot.nodes), "nodes")
			b.ReportMetric(float64(tot.empty), "empty-nodes")
			b.ReportMetric(float64(tot.removed), "removed-nodes")
		})
	}
}

// logMixNodes logs each node of the run, when it was created and the pods
// bound to it (with their requests): which pods a node above the optimum or
// an empty one was planned for is read from there and tidal's log.
func logMixNodes(t testing.TB, cs kubernetes.Interface, ns, run string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("list the pods of %s: %v", ns, err)
		return
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realMixRunLabel + "=" + run})
	if err != nil {
		t.Logf("list the nodes of %s: %v", run, err)
		return
	}
	on := map[string][]string{}
	for _, p := range pods.Items {
		r := p.Spec.Containers[0].Resources.Requests
		on[p.Spec.NodeName] = append(on[p.Spec.NodeName], fmt.Sprintf("%s(%s,%s)", p.Name, r.Cpu(), r.Memory()))
	}
	var b strings.Builder
	for _, n := range nodes.Items {
		fmt.Fprintf(&b, "\n  %s created %s: %v", n.Name, n.CreationTimestamp.Format("15:04:05"), on[n.Name])
	}
	t.Logf("%s: nodes and their pods:%s", run, b.String())
}
