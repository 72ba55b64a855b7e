package hpa

import (
	"fmt"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Random input generation shared by the differential and property tests.
// Every time is a whole number of seconds away from now, so that a later
// time.Now() inside upstream code cannot cross a boundary within a test.

const (
	testNamespace = "ns"
	podLabelKey   = "app"
	podLabelValue = "tidal"
)

// gen draws random inputs from a seeded source.
type gen struct {
	r   *rand.Rand
	now time.Time
}

func newGen(seed uint64, now time.Time) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, 0x7469_6461_6c)), now: now}
}

// chance returns true with probability p.
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// between returns a uniform int in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// ago returns a time between lo and hi whole seconds before now (a negative
// bound reaches into the future).
func (g *gen) ago(lo, hi int) time.Time {
	return g.now.Add(-time.Duration(g.between(lo, hi)) * time.Second)
}

// milliQ is a quantity of v milli-units.
func milliQ(v int64) resource.Quantity { return *resource.NewMilliQuantity(v, resource.DecimalSI) }

// podShape controls which oddities pods may have.
type podShape struct {
	resource v1.ResourceName
	requests bool // give containers requests (mostly)
	podLevel bool // allow pod-level requests and overhead
	sidecars bool // allow sidecar and plain init containers
}

// pods returns n random pods named p0..p(n-1).
func (g *gen) pods(n int, s podShape) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = g.pod(fmt.Sprintf("p%d", i), s)
	}
	return out
}

func (g *gen) pod(name string, s podShape) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: map[string]string{podLabelKey: podLabelValue}},
		Status:     v1.PodStatus{Phase: g.phase(), Conditions: g.conditions()},
	}
	if g.chance(0.07) {
		p.DeletionTimestamp = &metav1.Time{Time: g.ago(0, 30)}
	}
	if !g.chance(0.08) {
		p.Status.StartTime = &metav1.Time{Time: g.ago(0, 900)}
	}
	g.spec(p, s)
	return p
}

func (g *gen) phase() v1.PodPhase {
	switch x := g.r.IntN(100); {
	case x < 70:
		return v1.PodRunning
	case x < 82:
		return v1.PodPending
	case x < 90:
		return v1.PodFailed
	case x < 96:
		return v1.PodSucceeded
	default:
		return v1.PodUnknown
	}
}

func (g *gen) conditions() []v1.PodCondition {
	var cs []v1.PodCondition
	if g.chance(0.2) {
		cs = append(cs, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.Time{Time: g.ago(0, 900)}})
	}
	if g.chance(0.1) {
		return cs
	}
	status := v1.ConditionTrue
	switch x := g.r.IntN(100); {
	case x < 25:
		status = v1.ConditionFalse
	case x < 32:
		status = v1.ConditionUnknown
	}
	return append(cs, v1.PodCondition{Type: v1.PodReady, Status: status, LastTransitionTime: metav1.Time{Time: g.ago(-30, 900)}})
}

// request returns a random request list for res (sometimes empty).
func (g *gen) request(res v1.ResourceName, s podShape) v1.ResourceList {
	if !s.requests || g.chance(0.005) {
		return v1.ResourceList{"example.com/other": milliQ(1000)}
	}
	v := int64(g.between(0, 2000))
	if g.chance(0.02) {
		v = 0
	}
	return v1.ResourceList{res: milliQ(v)}
}

func (g *gen) spec(p *v1.Pod, s podShape) {
	for i := range g.between(1, 3) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name: fmt.Sprintf("c%d", i), Resources: v1.ResourceRequirements{Requests: g.request(s.resource, s)},
		})
	}
	if s.sidecars && g.chance(0.3) {
		always := v1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
			Name: "sc", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: g.request(s.resource, s)},
		})
	}
	if s.sidecars && g.chance(0.2) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
			Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{s.resource: milliQ(int64(g.between(0, 5000)))}},
		})
	}
	if s.podLevel && g.chance(0.15) {
		reqs := v1.ResourceList{v1.ResourceMemory: milliQ(int64(g.between(1, 4000)))}
		if g.chance(0.7) {
			reqs[s.resource] = milliQ(int64(g.between(1, 4000)))
		}
		p.Spec.Resources = &v1.ResourceRequirements{Requests: reqs}
	}
	if s.podLevel && g.chance(0.1) {
		p.Spec.Overhead = v1.ResourceList{s.resource: milliQ(int64(g.between(1, 300)))}
	}
}

// podMetrics returns samples for most pods plus, sometimes, samples for pods
// that are not listed.
func (g *gen) podMetrics(pods []*v1.Pod, maxValue int) PodMetrics {
	m := PodMetrics{}
	windows := []time.Duration{15 * time.Second, 30 * time.Second, time.Minute}
	sample := func() PodMetric {
		return PodMetric{Value: int64(g.between(0, maxValue)), Timestamp: g.ago(0, 120), Window: windows[g.r.IntN(len(windows))]}
	}
	for _, p := range pods {
		if g.chance(0.82) {
			m[p.Name] = sample()
		}
	}
	if g.chance(0.1) {
		for i := range g.between(1, 2) {
			m[fmt.Sprintf("ghost%d", i)] = sample()
		}
	}
	return m
}

// tolerances returns a random pair, often the default.
func (g *gen) tolerances() Tolerances {
	switch g.r.IntN(5) {
	case 0, 1:
		return UniformTolerances(DefaultTolerance)
	case 2:
		return Tolerances{}
	case 3:
		return Tolerances{Up: 0.05, Down: 0.2}
	default:
		return Tolerances{Up: float64(g.between(0, 50)) / 100, Down: float64(g.between(0, 50)) / 100}
	}
}

// values returns 1..4 external series values.
func (g *gen) values(maxValue int) []int64 {
	out := make([]int64, g.between(1, 4))
	for i := range out {
		out[i] = int64(g.between(0, maxValue))
	}
	return out
}
