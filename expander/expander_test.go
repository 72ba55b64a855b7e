package expander

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template(cpu, mem, zone string) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Status:     corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

func pods(n int, cpu, mem string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}}}
	}
	return out
}

func groups(options []Option) []string {
	out := make([]string, len(options))
	for i, o := range options {
		out[i] = o.NodeGroup
	}
	return out
}

func newCtx() *Context { return &Context{Seed: 1} }

func TestMostPodsChoosesThePoolThatFitsMorePods(t *testing.T) {
	options := []Option{
		{NodeGroup: "ten", NodeCount: 2, Pods: pods(10, "1", "1Gi"), Template: template("4", "16Gi", "a")},
		{NodeGroup: "twenty", NodeCount: 5, Pods: pods(20, "1", "1Gi"), Template: template("4", "16Gi", "a")},
	}
	if got := groups((mostPods{}).BestOptions(options, newCtx())); !reflect.DeepEqual(got, []string{"twenty"}) {
		t.Fatalf("most-pods kept %v, want [twenty]", got)
	}
}

func TestPriorityRatioPrefersTheMatchingShape(t *testing.T) {
	// Scheduled pods request 1 CPU per 4 GiB: the 2 CPU / 8 GiB pool has
	// that shape exactly.
	ctx := newCtx()
	ctx.RequestedCPUPerGiB = 0.25
	options := []Option{
		{NodeGroup: "compute-4x8", NodeCount: 1, Pods: pods(1, "1", "4Gi"), Template: template("4", "8Gi", "a")},
		{NodeGroup: "balanced-2x8", NodeCount: 1, Pods: pods(1, "1", "4Gi"), Template: template("2", "8Gi", "a")},
		{NodeGroup: "memory-2x32", NodeCount: 1, Pods: pods(1, "1", "4Gi"), Template: template("2", "32Gi", "a")},
	}
	if got := groups((priorityRatio{}).BestOptions(options, ctx)); !reflect.DeepEqual(got, []string{"balanced-2x8"}) {
		t.Fatalf("priority-ratio kept %v, want [balanced-2x8]", got)
	}
	chain, err := ParseChain("priority-ratio")
	if err != nil {
		t.Fatal(err)
	}
	if got := chain.Choose(options, ctx).Best.NodeGroup; got != "balanced-2x8" {
		t.Fatalf("priority-ratio chain chose %s", got)
	}
}

func TestLeastWaste(t *testing.T) {
	// 3 pods of 1 CPU / 2 GiB: on one 4 CPU / 8 GiB node 1/4 cpu and 1/4
	// memory are wasted; on one 8 CPU / 32 GiB node 5/8 and 26/32.
	options := []Option{
		{NodeGroup: "big", NodeCount: 1, Pods: pods(3, "1", "2Gi"), Template: template("8", "32Gi", "a")},
		{NodeGroup: "small", NodeCount: 1, Pods: pods(3, "1", "2Gi"), Template: template("4", "8Gi", "a")},
	}
	if w := Waste(options[1]); w < 0.499 || w > 0.501 {
		t.Fatalf("waste of small = %v, want 0.5", w)
	}
	if got := groups((leastWaste{}).BestOptions(options, newCtx())); !reflect.DeepEqual(got, []string{"small"}) {
		t.Fatalf("least-waste kept %v, want [small]", got)
	}
	equal := []Option{options[1], {NodeGroup: "small-b", NodeCount: 1, Pods: pods(3, "1", "2Gi"), Template: template("4", "8Gi", "b")}}
	if got := (leastWaste{}).BestOptions(equal, newCtx()); len(got) != 2 {
		t.Fatalf("equal waste should keep both, kept %v", groups(got))
	}
}

// TestLeastWasteSharedPodsIsWasteOfEach checks that least-waste, which sums
// the requests of a pod offered by several options once, keeps the options
// the waste of each option alone keeps: options offering the same pods
// (some of them a subset of the others) on nodes of different shapes.
func TestLeastWasteSharedPodsIsWasteOfEach(t *testing.T) {
	shared := append(pods(5, "1500m", "3Gi"), pods(7, "250m", "700Mi")...)
	shapes := [][2]string{{"4", "8Gi"}, {"8", "16Gi"}, {"16", "32Gi"}, {"8", "64Gi"}, {"2", "4Gi"}}
	var options []Option
	for i, sh := range shapes {
		for n := 1; n <= 4; n++ {
			offered := shared[i%3:]
			options = append(options, Option{NodeGroup: sh[0] + "x" + sh[1] + "-" + strings.Repeat("n", n), NodeCount: n, Pods: offered, Template: template(sh[0], sh[1], "a")})
		}
	}
	want := groups(keepBest(options, Waste, lower))
	if got := groups((leastWaste{}).BestOptions(options, newCtx())); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Fatalf("least-waste kept %v, the waste of each option keeps %v", got, want)
	}
}

func TestTopologyBalancePrefersTheSmallestZone(t *testing.T) {
	ctx := newCtx()
	ctx.ZoneNodes = map[string]int{"a": 5, "b": 2, "c": 2}
	options := []Option{
		{NodeGroup: "in-a", NodeCount: 1, Template: template("4", "8Gi", "a")},
		{NodeGroup: "in-b", NodeCount: 1, Template: template("4", "8Gi", "b")},
		{NodeGroup: "in-c", NodeCount: 1, Template: template("4", "8Gi", "c")},
	}
	got := groups(topologyBalance{}.BestOptions(options, ctx))
	if !reflect.DeepEqual(got, []string{"in-b", "in-c"}) {
		t.Fatalf("topology-balance kept %v, want [in-b in-c]", got)
	}
}

func TestPriceIsPerScheduledPod(t *testing.T) {
	ctx := newCtx()
	ctx.NodePrices = map[string]float64{"cheap-node": 0.10, "dense": 0.30}
	options := []Option{
		{NodeGroup: "cheap-node", NodeCount: 4, Pods: pods(4, "1", "1Gi")}, // 0.10 per pod
		{NodeGroup: "dense", NodeCount: 1, Pods: pods(4, "1", "1Gi")},      // 0.075 per pod
		{NodeGroup: "unpriced", NodeCount: 1, Pods: pods(40, "1", "1Gi")},
	}
	if got := groups((price{}).BestOptions(options, ctx)); !reflect.DeepEqual(got, []string{"dense"}) {
		t.Fatalf("price kept %v, want [dense]", got)
	}
}

func TestPriorities(t *testing.T) {
	p, err := ParsePriorities("10:\n  - .*-spot-.*\n50:\n  - .*-ondemand-.*\n  - ^gpu$\n")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	ctx := newCtx()
	ctx.Priorities = p
	options := []Option{{NodeGroup: "eu-spot-1"}, {NodeGroup: "eu-ondemand-1"}, {NodeGroup: "eu-ondemand-2"}, {NodeGroup: "other"}}
	if got := groups((priority{}).BestOptions(options, ctx)); !reflect.DeepEqual(got, []string{"eu-ondemand-1", "eu-ondemand-2"}) {
		t.Fatalf("priority kept %v", got)
	}
	none := []Option{{NodeGroup: "x"}, {NodeGroup: "y"}}
	if got := groups((priority{}).BestOptions(none, ctx)); len(got) != 2 {
		t.Fatalf("with no group matching, priority must keep all, kept %v", got)
	}
	ctx.Priorities = nil
	if got := (priority{}).BestOptions(options, ctx); len(got) != 4 {
		t.Fatalf("without a configuration priority must keep all, kept %v", groups(got))
	}
}

func TestParsePrioritiesErrors(t *testing.T) {
	tests := map[string]string{
		"high:\n  - a\n":      `priority "high" is not an integer`,
		"10:\n  - '[a-'\n":    `regular expression "[a-"`,
		"10: just-a-string\n": `want a map from integer priority`,
		"":                    `no priorities given`,
		"- a\n- b\n":          `want a map from integer priority`,
	}
	for in, want := range tests {
		if _, err := ParsePriorities(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePriorities(%q) error = %v, want it to contain %q", in, err, want)
		}
	}
}

func TestParseChain(t *testing.T) {
	tests := map[string][]string{
		"random":             {"random"},
		"most-pods":          {"most-pods", "random"},
		"least-waste":        {"least-waste", "random"},
		"priority":           {"priority", "random"},
		"topology-balance":   {"topology-balance", "least-waste", "random"},
		"priority-ratio":     {"priority", "priority-ratio", "least-waste", "random"},
		"priority,most-pods": {"priority", "most-pods", "random"},
		"price, random":      {"price", "random"},
	}
	for in, want := range tests {
		c, err := ParseChain(in)
		if err != nil {
			t.Fatalf("ParseChain(%q): %v", in, err)
		}
		if got := c.Names(); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseChain(%q) = %v, want %v", in, got, want)
		}
	}
	for _, bad := range []string{"cheapest", "priority,,least-waste", "priority,grpc"} {
		if _, err := ParseChain(bad); err == nil || !strings.Contains(err.Error(), "unknown expander") {
			t.Errorf("ParseChain(%q) error = %v", bad, err)
		}
	}
}

func TestChainBreaksTiesInOrder(t *testing.T) {
	p, _ := ParsePriorities("5:\n  - ^(a|b)$\n1:\n  - ^c$\n")
	ctx := newCtx()
	ctx.Priorities = p
	options := []Option{
		{NodeGroup: "a", NodeCount: 2, Pods: pods(4, "1", "2Gi"), Template: template("4", "16Gi", "z1")},
		{NodeGroup: "b", NodeCount: 1, Pods: pods(4, "1", "2Gi"), Template: template("4", "8Gi", "z1")},
		{NodeGroup: "c", NodeCount: 1, Pods: pods(4, "1", "1Gi"), Template: template("4", "4Gi", "z1")},
	}
	chain, _ := ParseChain("priority,least-waste")
	d := chain.Choose(options, ctx)
	if d.Best.NodeGroup != "b" {
		t.Fatalf("priority then least-waste should choose b, chose %s (steps %+v)", d.Best.NodeGroup, d.Steps)
	}
	if len(d.Steps) != 2 || d.Steps[0].Strategy != "priority" || len(d.Steps[0].Kept) != 2 {
		t.Fatalf("steps %+v: want priority keeping 2, then least-waste keeping 1", d.Steps)
	}
}

// --expander=priority alone breaks ties at random, as Cluster Autoscaler's:
// among groups of the same priority each is chosen, whatever their waste.
func TestPriorityAloneBreaksTiesAtRandom(t *testing.T) {
	p, _ := ParsePriorities("5:\n  - ^(a|b)$\n1:\n  - ^c$\n")
	ctx := newCtx()
	ctx.Priorities = p
	options := []Option{
		{NodeGroup: "a", NodeCount: 2, Pods: pods(4, "1", "2Gi"), Template: template("4", "16Gi", "z1")},
		{NodeGroup: "b", NodeCount: 1, Pods: pods(4, "1", "2Gi"), Template: template("4", "8Gi", "z1")},
		{NodeGroup: "c", NodeCount: 1, Pods: pods(4, "1", "1Gi"), Template: template("4", "4Gi", "z1")},
	}
	chain, _ := ParseChain("priority")
	seen := map[string]int{}
	for i := 0; i < 200; i++ {
		seen[chain.Choose(options, ctx).Best.NodeGroup]++
	}
	if seen["a"] == 0 || seen["b"] == 0 || seen["c"] != 0 {
		t.Fatalf("choices in 200 decisions %v: want both a and b (priority 5), never c", seen)
	}
}

func TestRandomIsUniformEnough(t *testing.T) {
	ctx := newCtx()
	options := []Option{{NodeGroup: "a"}, {NodeGroup: "b"}, {NodeGroup: "c"}}
	seen := map[string]int{}
	for i := 0; i < 300; i++ {
		seen[random{}.BestOptions(options, ctx)[0].NodeGroup]++
	}
	for _, g := range []string{"a", "b", "c"} {
		if seen[g] < 60 {
			t.Fatalf("random chose %s only %d times in 300: %v", g, seen[g], seen)
		}
	}
}

// A decision is reproducible from its input: the same seed gives the same
// choices, a fork starts again from the seed, and other seeds choose
// otherwise.
func TestTheSeedDecidesTheTies(t *testing.T) {
	options := []Option{{NodeGroup: "a"}, {NodeGroup: "b"}, {NodeGroup: "c"}, {NodeGroup: "d"}}
	draw := func(ctx *Context) string {
		var out []byte
		for i := 0; i < 20; i++ {
			out = append(out, random{}.BestOptions(options, ctx)[0].NodeGroup[0])
		}
		return string(out)
	}
	ctx := &Context{Seed: 42}
	first := draw(ctx.Fork())
	if again := draw(ctx.Fork()); again != first {
		t.Fatalf("seed 42 chose %s, then %s: want the same choices", first, again)
	}
	if again := draw(&Context{Seed: 42}); again != first {
		t.Fatalf("a new context with seed 42 chose %s, the first %s: want the same", again, first)
	}
	if other := draw(&Context{Seed: 43}); other == first {
		t.Fatalf("seeds 42 and 43 both chose %s: want the seed to matter", first)
	}
}
