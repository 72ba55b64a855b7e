package consolidate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// shape is a node group's node: cpu and price per hour.
type shape struct {
	cpu   string
	price float64
}

var shapes = map[string]shape{"big": {"8", 0.50}, "small": {"4", 0.19}}

func node(name, group string) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(shapes[group].cpu), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), ResourceVersion: "7",
		Labels: map[string]string{corev1.LabelHostname: name, "group": group, corev1.LabelOSStable: "linux"}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// world is a cluster described as data, built into a snapshot in a random
// order (as listers return objects).
type world struct {
	nodes map[string]string // node → group
	pods  []*corev1.Pod
	pdbs  []*policyv1.PodDisruptionBudget
}

// fill puts n pods of cpu each, of a ReplicaSet named app, on node.
func (w *world) fill(node, app string, n int, cpu string, edit func(*corev1.Pod)) {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%s-%d", app, node, i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{"app": app, "tier": "front"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: types.UID(app), Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if edit != nil {
			edit(p)
		}
		w.pods = append(w.pods, p)
	}
}

// build makes the input: every node a candidate, its groups priced
// (unless unpriced), seed the order of nodes and pods.
func (w *world) build(t *testing.T, seed uint64, unpriced ...string) Input {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	snap, checker := checkertest.New(t, fake.NewClientset())
	names := make([]string, 0, len(w.nodes))
	for n := range w.nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	simtest.Shuffle(r, names)
	in := Input{Checker: checker, Groups: map[string]Group{}, PDBs: w.pdbs, Now: now, MaxNodes: 10,
		Owners: scaledown.Owners{Kinds: scaledown.ControllerKinds(), Existing: map[scaledown.OwnerKey]bool{}},
		Rules:  scaledown.RuleOptions{SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true, SkipNodesWithCustomControllerPods: true}}
	target := map[string]int{}
	for _, n := range names {
		if _, err := snap.AddNode(node(n, w.nodes[n])); err != nil {
			t.Fatal(err)
		}
		in.Candidates = append(in.Candidates, Candidate{Name: n, Group: w.nodes[n]})
		target[w.nodes[n]]++
	}
	pods := slices.Clone(w.pods)
	simtest.Shuffle(r, pods)
	for _, p := range pods {
		p = p.DeepCopy()
		simtest.Admit(p, r)
		in.Owners.Existing[scaledown.OwnerKey{Kind: "ReplicaSet", Namespace: p.Namespace, Name: p.OwnerReferences[0].Name}] = true
		info, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := snap.AddPod(info, p.Spec.NodeName); err != nil {
			t.Fatal(err)
		}
	}
	for g := range shapes {
		tmpl, err := simulator.NewNodeTemplate(g, node("template-"+g, g), nil)
		if err != nil {
			t.Fatal(err)
		}
		in.Groups[g] = Group{Price: shapes[g].price, Priced: !slices.Contains(unpriced, g), Template: tmpl, Target: target[g], Max: 10}
	}
	return in
}

// summary renders a plan for comparison: each replacement as
// kind:old,old->count×group(saving).
func summary(p *Plan) string {
	var parts []string
	for _, r := range p.Replacements {
		old := r.Nodes()
		slices.Sort(old)
		parts = append(parts, fmt.Sprintf("%s:%s->%d×%s(%.2f)", r.Kind, strings.Join(old, ","), r.Count, r.Group, r.Saving))
	}
	return strings.Join(parts, " ")
}

func keptReason(p *Plan, node string) string {
	for _, k := range p.Kept {
		if k.Node == node {
			return k.Reason
		}
	}
	return ""
}

func decide(t *testing.T, in Input) *Plan {
	t.Helper()
	before := in.Checker.Snapshot().Version()
	p, err := Decide(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if in.Checker.Snapshot().Forked() || in.Checker.Snapshot().Version() != before {
		t.Fatal("Decide left the snapshot changed")
	}
	return p
}

// halfFull are 8-CPU nodes each half full with four 1-CPU pods.
func halfFull(nodes int) *world {
	w := &world{nodes: map[string]string{}}
	for i := 0; i < nodes; i++ {
		n := fmt.Sprintf("big-%d", i)
		w.nodes[n] = "big"
		w.fill(n, "web", 4, "1", nil)
	}
	return w
}

// apart is the case: 8-CPU nodes each half full, no node's pods
// fitting on the others (one replica per node of a workload with required
// anti-affinity, and a 2-CPU pod), while a 4-CPU node holds one node's.
func apart(nodes int) *world {
	w := &world{nodes: map[string]string{}}
	for i := 0; i < nodes; i++ {
		n := fmt.Sprintf("big-%d", i)
		w.nodes[n] = "big"
		w.fill(n, "web", 1, "2", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: corev1.LabelHostname}}}}
		})
		w.fill(n, "api", 1, "2", nil)
	}
	return w
}

func TestDecide(t *testing.T) {
	pdb := func(allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
	}
	onFirst := func(edit func(*corev1.Pod)) func(*world) {
		return func(w *world) {
			for _, p := range w.pods {
				if p.Spec.NodeName == "big-0" {
					edit(p)
					return
				}
			}
		}
	}
	cases := []struct {
		name     string
		world    func() *world
		edit     func(*world)
		input    func(*Input)
		unpriced []string
		want     string
		// kept is a node and a part of why it stays.
		kept [2]string
	}{
		{name: "half-full 8-CPU nodes: each replaced by one cheaper 4-CPU node", world: func() *world { return apart(2) },
			want: "single:big-0->1×small(0.31) single:big-1->1×small(0.31)"},
		{name: "quarter-full nodes: three replaced by one new node", world: func() *world {
			w := &world{nodes: map[string]string{"big-0": "big", "big-1": "big", "big-2": "big"}}
			for _, n := range []string{"big-0", "big-1", "big-2"} {
				w.fill(n, "web", 2, "1", nil)
			}
			return w
		}, want: "multi:big-0,big-1,big-2->2×small(1.12)"},
		{name: "one new node for two, when cheaper than two singly", world: func() *world {
			w := &world{nodes: map[string]string{"big-0": "big", "big-1": "big"}}
			w.fill("big-0", "web", 1, "5", nil)
			w.fill("big-1", "web", 1, "1500m", nil)
			w.fill("big-1", "api", 1, "1500m", nil)
			return w
		}, want: "multi:big-0,big-1->1×big(0.50)"},
		{name: "half-full nodes whose pods fit on the others: never replaced alone", world: func() *world {
			return halfFull(2)
		}, input: func(in *Input) { in.MaxNodes = 1 }, kept: [2]string{"big-0", "scale-down's"}},
		{name: "the largest set that fits on fewer nodes goes; the rest singly", world: func() *world {
			w := &world{nodes: map[string]string{"small-0": "small", "small-1": "small", "big-0": "big"}}
			w.fill("small-0", "web", 1, "1500m", nil)
			w.fill("small-1", "web", 1, "1500m", nil)
			w.fill("big-0", "web", 3, "1", nil)
			return w
		}, want: "multi:big-0,small-0,small-1->2×small(0.50)"},
		{name: "a group without a price is never chosen", world: func() *world { return halfFull(1) }, unpriced: []string{"small"},
			kept: [2]string{"big-0", "no cheaper node group"}},
		{name: "a node of a group without a price is not replaced", world: func() *world { return halfFull(1) }, unpriced: []string{"big"},
			kept: [2]string{"big-0", "has no price"}},
		{name: "saving below the fraction", world: func() *world { return halfFull(1) },
			input: func(in *Input) { in.Min.Fraction = 0.7 }, kept: [2]string{"big-0", "no cheaper node group"}},
		{name: "saving below the minimum per hour", world: func() *world { return halfFull(1) },
			input: func(in *Input) { in.Min.PerHour = 0.35 }, kept: [2]string{"big-0", "no cheaper node group"}},
		{name: "PDB with no disruption left", world: func() *world { w := halfFull(1); w.pdbs = append(w.pdbs, pdb(0)); return w },
			kept: [2]string{"big-0", "NotEnoughPdb"}},
		{name: "PDB allowing two of four: one node", world: func() *world { w := apart(2); w.pdbs = append(w.pdbs, pdb(2)); return w },
			want: "single:big-0->1×small(0.31)", kept: [2]string{"big-1", "NotEnoughPdb"}},
		{name: "karpenter.sh/do-not-disrupt on a pod", world: func() *world { return halfFull(1) },
			edit: onFirst(func(p *corev1.Pod) { p.Annotations = map[string]string{scaledown.DoNotDisruptAnnotation: "true"} }),
			kept: [2]string{"big-0", "karpenter.sh/do-not-disrupt=true"}},
		{name: "safe-to-evict=false", world: func() *world { return halfFull(1) },
			edit: onFirst(func(p *corev1.Pod) { p.Annotations = map[string]string{scaledown.SafeToEvictAnnotation: "false"} }),
			kept: [2]string{"big-0", "NotSafeToEvictAnnotation"}},
		{name: "local storage", world: func() *world { return halfFull(1) },
			edit: onFirst(func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}), kept: [2]string{"big-0", "LocalStorageRequested"}},
		{name: "kube-system pod without PDB", world: func() *world { return halfFull(1) },
			edit: onFirst(func(p *corev1.Pod) { p.Namespace = metav1.NamespaceSystem }), kept: [2]string{"big-0", "UnmovableKubeSystemPod"}},
		{name: "pod of no controller", world: func() *world { return halfFull(1) },
			edit: onFirst(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }), kept: [2]string{"big-0", "NotReplicated"}},
		{name: "old group at its minimum", world: func() *world { return halfFull(1) },
			input: func(in *Input) { g := in.Groups["big"]; g.Min = 1; in.Groups["big"] = g }, kept: [2]string{"big-0", "minimum size"}},
		{name: "new group at its maximum", world: func() *world { return halfFull(1) },
			input: func(in *Input) { g := in.Groups["small"]; g.Max = g.Target; in.Groups["small"] = g }, kept: [2]string{"big-0", "no cheaper"}},
		{name: "cluster budget of one node", world: func() *world { return apart(2) },
			input: func(in *Input) { in.Budget = scaledown.DisruptionsLeft(nil, 1, nil) },
			want:  "single:big-0->1×small(0.31)", kept: [2]string{"big-1", "disruption budget"}},
		{name: "group budget spent by a removal under way", world: func() *world { return apart(2) },
			input: func(in *Input) {
				in.Budget = scaledown.DisruptionsLeft(map[string]int{"big": 1}, -1, map[string]int{"big": 1})
			}, kept: [2]string{"big-0", "disruption budget"}},
		{name: "room scale-down counts on is not counted twice", world: func() *world {
			w := &world{nodes: map[string]string{"big-0": "big", "small-0": "small"}}
			w.fill("big-0", "web", 3, "2", nil)
			w.fill("small-0", "web", 1, "2", nil)
			return w
		}, input: func(in *Input) {
			// Without scale-down's removal, big-0's pods fit on one
			// small node plus small-0's room. small-0 leaving takes that
			// room: big-0 would need two small nodes.
			in.Leaving = []Leaving{{Node: "small-0"}}
			in.Candidates = slices.DeleteFunc(in.Candidates, func(c Candidate) bool { return c.Name == "small-0" })
		}, kept: [2]string{"big-0", "no cheaper"}},
		{name: "an empty node is scale-down's", world: func() *world { return &world{nodes: map[string]string{"big-0": "big"}} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				w := tc.world()
				if tc.edit != nil {
					tc.edit(w)
				}
				in := w.build(t, seed, tc.unpriced...)
				if tc.input != nil {
					tc.input(&in)
				}
				p := decide(t, in)
				if got := summary(p); got != tc.want {
					t.Fatalf("seed %d: replacements %q, want %q (kept: %v, waiting %q)", seed, got, tc.want, p.Kept, p.Waiting)
				}
				if tc.kept[0] != "" && !strings.Contains(keptReason(p, tc.kept[0]), tc.kept[1]) {
					t.Fatalf("seed %d: %s kept for %q, want it to say %q (kept: %v)", seed, tc.kept[0], keptReason(p, tc.kept[0]), tc.kept[1], p.Kept)
				}
			}
		})
	}
}

// TestDecideEvictsWhatRuns checks a replacement's pods to evict are the
// node's own (not DaemonSet or mirror pods), as scale-down classifies them.
func TestDecideEvictsWhatRuns(t *testing.T) {
	w := halfFull(1)
	w.fill("big-0", "agent", 1, "100m", func(p *corev1.Pod) {
		p.OwnerReferences[0].Kind = "DaemonSet"
	})
	p := decide(t, w.build(t, 7))
	if len(p.Replacements) != 1 {
		t.Fatalf("want one replacement, got %q (kept %v)", summary(p), p.Kept)
	}
	old := p.Replacements[0].Old[0]
	if len(old.Pods.ToMove) != 4 || len(old.Pods.DaemonSet) != 1 {
		t.Fatalf("want 4 pods to move and 1 DaemonSet pod, got %d and %d", len(old.Pods.ToMove), len(old.Pods.DaemonSet))
	}
	if r := p.Replacements[0]; math.Abs(r.OldCost-0.50) > 1e-9 || math.Abs(r.NewCost-0.19) > 1e-9 {
		t.Fatalf("costs %v → %v, want 0.50 → 0.19", r.OldCost, r.NewCost)
	}
}

func TestParseDisruptionBudget(t *testing.T) {
	for in, want := range map[string]int{"3": 3, "10%": 2, "0": 0, "100%": 11} {
		b, err := scaledown.ParseDisruptionBudget(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := b.Allowed(11); got != want {
			t.Errorf("%q of 11 nodes: %d, want %d", in, got, want)
		}
	}
	for _, bad := range []string{"", "-1", "101%", "ten", "5%%"} {
		if _, err := scaledown.ParseDisruptionBudget(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func resourceCPU(v string) *resource.Quantity { q := resource.MustParse(v); return &q }

func ownerOf(p *corev1.Pod) scaledown.OwnerKey {
	return scaledown.OwnerKey{Kind: p.OwnerReferences[0].Kind, Namespace: p.Namespace, Name: p.OwnerReferences[0].Name}
}
