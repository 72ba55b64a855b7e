package scaleup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// The random mixes: two identical groups of 4 CPU / 16 GiB nodes in two
// zones, no node yet, and 5 to 8 Deployments of 1 to 5 replicas asking for
// 100m to 3 CPU and 128Mi to 12Gi, about 30 % pinned to a zone and about
// 25 % with hostname anti-affinity among their replicas.
const (
	mixNodeCPU = 4000
	mixNodeMiB = 16 * 1024
	mixSeeds   = 24
)

var mixZones = []string{"zone-a", "zone-b"}

// mix is one seed's burst: the pods as the API server stores them, and the
// same pods as plain items for the exact search.
type mix struct {
	pods  []*corev1.Pod
	items []simtest.Item
}

func newMix(seed uint64) mix {
	r := rand.New(rand.NewPCG(seed, 13))
	var m mix
	for w := 0; w < 5+r.IntN(4); w++ {
		cpu := int64(100 * (1 + r.IntN(30)))
		mib := int64(128 * (1 + r.IntN(96)))
		zone, anti := -1, -1
		if r.Float64() < 0.3 {
			zone = r.IntN(len(mixZones))
		}
		if r.Float64() < 0.25 {
			anti = w
		}
		app := fmt.Sprintf("app-%d", w)
		for i := 0; i < 1+r.IntN(5); i++ {
			m.pods = append(m.pods, mixPod(r, app, cpu, mib, zone, anti >= 0))
			m.items = append(m.items, simtest.Item{CPU: cpu, Mem: mib, Zone: zone, Anti: anti, Workload: w})
		}
	}
	simtest.AdmitAll(r, m.pods)
	return m
}

func mixPod(r *rand.Rand, app string, cpu, mib int64, zone int, anti bool) *corev1.Pod {
	name := app + "-" + simtest.Suffix(r, 5)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: types.UID("rs-" + app), Controller: ptrTrue()}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(mib<<20, resource.BinarySI)}}}}},
	}
	if zone >= 0 {
		p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: mixZones[zone]}
	}
	if anti {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: corev1.LabelHostname}}}}
	}
	return p
}

// mixResult is what tidal did with one mix, once the pods settled.
type mixResult struct {
	planned, settled, empty, unplaced, decisions int
	planner                                      string
}

// runMix decides for the mix, then lets the pods settle as the scheduler
// places them (on the least allocated node that fits: its default
// spreading), and decides again for the pods the scheduler left out, until
// all run or no decision helps.
func runMix(t testing.TB, m mix, greedyOnly bool) mixResult {
	return runMixSettling(t, m, greedyOnly, false)
}

// runMixSettling is runMix; with oneByOne the new nodes come one at a time
// (the groups in turn) and the scheduler places what it can on the nodes
// there so far before the next comes, as when nodes register seconds apart.
func runMixSettling(t testing.TB, m mix, greedyOnly, oneByOne bool) mixResult {
	c := newCluster(t)
	for _, z := range mixZones {
		c.group("pool-"+z, "4", "16Gi", z, 0, 100)
	}
	var res mixResult
	pending := m.pods
	for iter := 0; iter < 4 && len(pending) > 0; iter++ {
		c.pending = pending
		plan := c.decide("least-waste", func(in *Input) { in.greedyOnly = greedyOnly })
		res.decisions++
		if iter == 0 {
			res.planned, res.planner = addedNodes(plan), plan.Planner
		}
		if len(plan.ScaleUps) == 0 {
			break
		}
		if oneByOne {
			pending = c.addOneByOne(plan, pending)
			continue
		}
		c.addPlanned(plan)
		pending = c.schedule(pending)
	}
	res.unplaced = len(pending)
	res.settled = c.snap.Len()
	for _, ni := range c.snap.Infos() {
		if len(ni.GetPods()) == 0 {
			res.empty++
		}
	}
	return res
}

func addedNodes(p *Plan) int {
	n := 0
	for _, u := range p.ScaleUps {
		n += u.To - u.From
	}
	return n
}

// addPlanned adds the plan's nodes to the cluster as ready nodes.
func (c *cluster) addPlanned(p *Plan) {
	for _, u := range p.ScaleUps {
		for i := range c.groups {
			g := &c.groups[i]
			if g.ID != u.Group {
				continue
			}
			for n := g.Target; n < u.To; n++ {
				if _, err := g.Template.AddCopy(c.snap, fmt.Sprintf("%s-%d", g.ID, n)); err != nil {
					c.t.Fatal(err)
				}
			}
			g.Target = u.To
		}
	}
}

// addOneByOne adds the plan's nodes one at a time, the groups in turn,
// scheduling the pending pods after each; it returns the pods left.
func (c *cluster) addOneByOne(p *Plan, pending []*corev1.Pod) []*corev1.Pod {
	for added := true; added; {
		added = false
		for _, u := range p.ScaleUps {
			for i := range c.groups {
				g := &c.groups[i]
				if g.ID != u.Group || g.Target >= u.To {
					continue
				}
				if _, err := g.Template.AddCopy(c.snap, fmt.Sprintf("%s-%d", g.ID, g.Target)); err != nil {
					c.t.Fatal(err)
				}
				g.Target++
				added = true
				pending = c.schedule(pending)
			}
		}
	}
	return pending
}

// schedule places pods in order as the default scheduler would, each on
// the node that fits it with the most cpu and memory left (least
// allocated), and returns those that fit nowhere.
func (c *cluster) schedule(pods []*corev1.Pod) []*corev1.Pod {
	ctx := context.Background()
	var left []*corev1.Pod
	for _, p := range pods {
		pc, err := c.checker.PreFilter(ctx, p)
		if err != nil {
			c.t.Fatal(err)
		}
		best, bestScore := "", -1.0
		for _, ni := range c.snap.Infos() {
			if !c.checker.Filter(ctx, pc, ni).IsSuccess() {
				continue
			}
			if s := leastAllocated(ni.(*framework.NodeInfo), p); s > bestScore {
				best, bestScore = ni.Node().Name, s
			}
		}
		if best == "" {
			left = append(left, p)
			continue
		}
		if _, err := c.checker.Place(ctx, pc, p, best); err != nil {
			c.t.Fatal(err)
		}
	}
	return left
}

// leastAllocated is the share of cpu and memory a node keeps free with p
// on it, as the scheduler's default scoring favours.
func leastAllocated(n *framework.NodeInfo, p *corev1.Pod) float64 {
	req := p.Spec.Containers[0].Resources.Requests
	free := func(want, used, have int64) float64 { return float64(have-used-want) / float64(have) }
	return free(req.Cpu().MilliValue(), n.Requested.MilliCPU, n.Allocatable.MilliCPU) +
		free(req.Memory().Value(), n.Requested.Memory, n.Allocatable.Memory)
}

// schedulerMinimum is the fewest new nodes (over every split between the
// two zones) on which the scheduler's placement, as schedule models it,
// finds a node for every pod of the mix when they all come at once: what
// any single scale-up needs for the pods to settle, however it packs them.
// It returns -1 when no total up to limit does.
func schedulerMinimum(t testing.TB, m mix, from, limit int) int {
	for total := from; total <= limit; total++ {
		for a := 0; a <= total; a++ {
			c := newCluster(t)
			for _, z := range mixZones {
				c.group("pool-"+z, "4", "16Gi", z, 0, 100)
			}
			for i := 0; i < total; i++ {
				g := c.groups[0]
				if i >= a {
					g = c.groups[1]
				}
				if _, err := g.Template.AddCopy(c.snap, fmt.Sprintf("node-%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if len(c.schedule(m.pods)) == 0 {
				return total
			}
		}
	}
	return -1
}

// mixTotals sums a run over every seed, with the exact optimum.
type mixTotals struct {
	optimum, planned, settled, schedMin, empty, unplaced, improved int
	// oneSettled and oneEmpty are settled and empty when nodes come one by
	// one.
	oneSettled, oneEmpty int
}

func runMixes(t testing.TB, greedyOnly bool) mixTotals {
	var tot mixTotals
	for seed := uint64(1); seed <= mixSeeds; seed++ {
		m := newMix(seed)
		opt, proven := simtest.Optimum(m.items, mixNodeCPU, mixNodeMiB, 5_000_000)
		if !proven {
			t.Fatalf("seed %d: the exact search gave up (best %d): make the mixes smaller", seed, opt)
		}
		r := runMix(t, m, greedyOnly)
		o := runMixSettling(t, m, greedyOnly, true)
		t.Logf("seed %2d one by one: settled %2d (%d decisions), empty %d, unplaced %d", seed, o.settled, o.decisions, o.empty, o.unplaced)
		tot.oneSettled += o.settled
		tot.oneEmpty += o.empty
		tot.unplaced += o.unplaced
		smin := schedulerMinimum(t, m, opt, opt+10)
		if smin < 0 {
			t.Fatalf("seed %d: no split of up to %d nodes lets the scheduler place every pod", seed, opt+10)
		}
		t.Logf("seed %2d: %2d pods, optimum %2d, planned %2d, settled %2d (%d decisions, scheduler's minimum %2d), empty %d, unplaced %d, planner %q",
			seed, len(m.pods), opt, r.planned, r.settled, r.decisions, smin, r.empty, r.unplaced, r.planner)
		tot.optimum += opt
		tot.planned += r.planned
		tot.settled += r.settled
		tot.schedMin += smin
		tot.empty += r.empty
		tot.unplaced += r.unplaced
		if r.planner != "" {
			tot.improved++
		}
	}
	return tot
}

// TestRandomMixesPlanTheOptimumPlusAtMostFivePercent: over the seeds, the
// nodes the first decision plans are at most 5 % above the exact optimum;
// once the scheduler has placed the pods (and tidal decided again for those
// its spreading left out) no new node is empty, every pod runs, and the
// nodes are at most 5 % above the fewest with which one scale-up lets the
// scheduler's own placement fit every pod.
func TestRandomMixesPlanTheOptimumPlusAtMostFivePercent(t *testing.T) {
	tot := runMixes(t, false)
	t.Logf("%d seeds: optimum %d nodes, planned %d; settled %d, scheduler's minimum %d, empty %d, unplaced %d; whole-plan packing used in %d",
		mixSeeds, tot.optimum, tot.planned, tot.settled, tot.schedMin, tot.empty, tot.unplaced, tot.improved)
	if float64(tot.planned) > 1.05*float64(tot.optimum) {
		t.Errorf("planned %d nodes where the optimum is %d (limit %.1f)", tot.planned, tot.optimum, 1.05*float64(tot.optimum))
	}
	if float64(tot.settled) > 1.05*float64(tot.schedMin) || tot.empty > 0 || tot.unplaced > 0 {
		t.Errorf("settled on %d nodes where the scheduler needs %d (limit %.1f), %d empty, %d pods unplaced",
			tot.settled, tot.schedMin, 1.05*float64(tot.schedMin), tot.empty, tot.unplaced)
	}
}

// BenchmarkRandomMixes reports, summed over the seeds, the exact optimum,
// the nodes planned by the whole-plan planner and by the rounds alone, and
// the nodes once the pods settled; ns/op is one pass over every seed.
func BenchmarkRandomMixes(b *testing.B) {
	var tot, greedy mixTotals
	for i := 0; i < b.N; i++ {
		tot = runMixes(b, false)
	}
	b.StopTimer()
	greedy = runMixes(b, true)
	b.ReportMetric(float64(tot.optimum), "optimum-nodes")
	b.ReportMetric(float64(tot.planned), "planned-nodes")
	b.ReportMetric(float64(greedy.planned), "rounds-only-planned-nodes")
	b.ReportMetric(float64(tot.settled), "settled-nodes")
	b.ReportMetric(float64(greedy.settled), "rounds-only-settled-nodes")
	b.ReportMetric(float64(tot.schedMin), "scheduler-minimum-nodes")
	b.ReportMetric(float64(tot.empty), "empty-nodes")
	b.ReportMetric(float64(tot.oneSettled), "one-by-one-settled-nodes")
	b.ReportMetric(float64(tot.oneEmpty), "one-by-one-empty-nodes")
	b.ReportMetric(float64(greedy.oneSettled), "rounds-only-one-by-one-settled-nodes")
	b.ReportMetric(float64(greedy.oneEmpty), "rounds-only-one-by-one-empty-nodes")
}

// TestWholePlanNeverWorseThanTheRounds: on every seed the whole-plan
// comparison plans at most the nodes of the rounds alone, and fewer on
// some.
func TestWholePlanNeverWorseThanTheRounds(t *testing.T) {
	whole, rounds := 0, 0
	for seed := uint64(1); seed <= mixSeeds; seed++ {
		m := newMix(seed)
		w, r := runMix(t, m, false), runMix(t, m, true)
		if w.planned > r.planned {
			t.Errorf("seed %d: the whole plan has %d nodes, the rounds alone %d", seed, w.planned, r.planned)
		}
		whole += w.planned
		rounds += r.planned
	}
	if whole >= rounds {
		t.Fatalf("over %d seeds the whole plan has %d nodes, the rounds alone %d: want fewer", mixSeeds, whole, rounds)
	}
}
