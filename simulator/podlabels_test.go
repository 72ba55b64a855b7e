package simulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/tidal-autoscaler/tidal/simulator/factorylisters"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// affinityStateKey is where the inter-pod affinity plugin keeps its
// PreFilter state in the cycle state.
const affinityStateKey = "PreFilter" + names.InterPodAffinity

var (
	// labelNamespaces are the pods' namespaces; "gone" has no Namespace
	// object (its pods are still in the snapshot).
	labelNamespaces = []string{"default", "team-a", "team-b", "kube-system", "gone"}
	labelApps       = []string{"web", "db", "cache", "batch"}
)

// namespaceObjects are the Namespace objects as the API server keeps
// them: the name label on each, a team label on some.
func namespaceObjects() []*corev1.Namespace {
	var out []*corev1.Namespace
	for _, name := range labelNamespaces[:4] {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("ns-" + name),
			Labels: map[string]string{corev1.LabelMetadataName: name}}}
		if name == "team-a" || name == "team-b" {
			ns.Labels["team"] = name[len("team-"):]
		}
		out = append(out, ns)
	}
	return out
}

// labelledPod is a running or pending pod of a random namespace and app,
// admitted as the API server admits it, with its ReplicaSet's
// pod-template-hash; sometimes without an app label, sometimes with a tier.
func labelledPod(r *rand.Rand) *corev1.Pod {
	app := labelApps[r.IntN(len(labelApps))]
	p := testPod(app, []string{"100m", "500m"}[r.IntN(2)])
	p.Namespace = labelNamespaces[r.IntN(len(labelNamespaces))]
	p.Name = app + "-" + simtest.Suffix(r, 5)
	p.UID = types.UID(p.Namespace + "/" + p.Name)
	p.Labels["pod-template-hash"] = []string{"5d4f8", "7c9b6"}[r.IntN(2)]
	switch r.IntN(4) {
	case 0:
		delete(p.Labels, "app")
	case 1:
		p.Labels["tier"] = []string{"front", "back", "10", "3"}[r.IntN(4)]
	}
	simtest.Admit(p, r)
	return p
}

// randomTerm is a pod affinity term as the API server stores it: label
// selectors of every operator (or none), the pod's own namespace, named
// namespaces, namespace selectors (empty or not), and matchLabelKeys
// merged into the selector as the API server merges them.
func randomTerm(r *rand.Rand, p *corev1.Pod) corev1.PodAffinityTerm {
	app := labelApps[r.IntN(len(labelApps))]
	t := corev1.PodAffinityTerm{TopologyKey: []string{corev1.LabelHostname, corev1.LabelTopologyZone}[r.IntN(2)]}
	switch r.IntN(9) {
	case 0, 1, 2:
		t.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	case 3:
		t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{app, labelApps[r.IntN(len(labelApps))]}}}}
	case 4:
		t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	case 5:
		t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{app}}}}
	case 6:
		t.LabelSelector = &metav1.LabelSelector{}
	case 7:
		// No selector: the term selects no pod.
	case 8:
		t.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}
	}
	if r.IntN(4) == 0 {
		t.MatchLabelKeys = []string{"pod-template-hash"}
		if t.LabelSelector == nil {
			t.LabelSelector = &metav1.LabelSelector{}
		}
		t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "pod-template-hash", Operator: metav1.LabelSelectorOpIn, Values: []string{p.Labels["pod-template-hash"]}})
	}
	switch r.IntN(6) {
	case 0:
		t.Namespaces = []string{labelNamespaces[r.IntN(len(labelNamespaces))], "gone"}
	case 1:
		t.NamespaceSelector = &metav1.LabelSelector{}
	case 2:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	case 3:
		t.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpExists}}}
		t.Namespaces = []string{"default"}
	}
	return t
}

// withTerms gives p one to three required terms, of pod affinity or
// anti-affinity, sometimes a preferred one and sometimes a topology spread
// constraint.
func withTerms(r *rand.Rand, p *corev1.Pod) *corev1.Pod {
	a := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}, PodAntiAffinity: &corev1.PodAntiAffinity{}}
	for range 1 + r.IntN(3) {
		if r.IntN(2) == 0 {
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, randomTerm(r, p))
		} else {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, randomTerm(r, p))
		}
	}
	if r.IntN(4) == 0 {
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: randomTerm(r, p)}}
	}
	if r.IntN(8) == 0 {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}[r.IntN(2)],
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}}}
	}
	p.Spec.Affinity = a
	return p
}

// labelCluster is a snapshot of up to 40 nodes holding pods of every
// namespace, some with required anti-affinity of their own.
func labelCluster(t *testing.T, r *rand.Rand) (*Snapshot, []*corev1.Node) {
	s := NewSnapshot()
	nodes := make([]*corev1.Node, 1+r.IntN(40))
	for i := range nodes {
		nodes[i] = randomNode(r, i)
		if _, err := s.AddNode(nodes[i]); err != nil {
			t.Fatal(err)
		}
	}
	for range r.IntN(8 * len(nodes)) {
		addRunning(t, r, s)
	}
	return s, nodes
}

// addRunning binds a new pod to a random node, one in ten with required
// anti-affinity terms.
func addRunning(t *testing.T, r *rand.Rand, s *Snapshot) {
	if s.Len() == 0 {
		return
	}
	p := labelledPod(r)
	if r.IntN(10) == 0 {
		withTerms(r, p)
		p.Spec.Affinity.PodAffinity, p.Spec.TopologySpreadConstraints = nil, nil
	}
	ni := s.Infos()[r.IntN(s.Len())]
	p.Spec.NodeName = ni.Node().Name
	if err := s.AddPod(info(p), p.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
}

// change makes one random change to s: a pod added or removed, a node
// added or removed, or a fork opened, reverted or committed.
func change(t *testing.T, r *rand.Rand, s *Snapshot, serial *int) {
	switch k := r.IntN(10); {
	case k < 4:
		addRunning(t, r, s)
	case k < 6 && s.Len() > 0:
		ni := s.Infos()[r.IntN(s.Len())]
		if pods := ni.GetPods(); len(pods) > 0 {
			p := pods[r.IntN(len(pods))].GetPod()
			if err := s.RemovePod(p, ni.Node().Name); err != nil {
				t.Fatal(err)
			}
		}
	case k == 6 && s.Len() > 1:
		if err := s.RemoveNode(s.Infos()[r.IntN(s.Len())].Node().Name); err != nil {
			t.Fatal(err)
		}
	case k == 7:
		*serial++
		if _, err := s.AddNode(randomNode(r, 1000+*serial)); err != nil {
			t.Fatal(err)
		}
	case k == 8:
		s.Fork()
	case s.Forked() && r.IntN(2) == 0:
		s.Revert()
	default:
		s.Commit()
	}
}

// compareChecks checks pod with both checkers and reports any difference
// in what PreFilter found or what Filter says of any node; it returns
// whether some node was refused by the inter-pod affinity plugin.
func compareChecks(t *testing.T, ctx context.Context, label string, narrowed, whole *Checker, pod *corev1.Pod) bool {
	t.Helper()
	got, err := narrowed.PreFilter(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	want, err := whole.PreFilter(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Status, want.Status) || !reflect.DeepEqual(got.result, want.result) {
		t.Fatalf("%s: PreFilter %v %v over the nodes its terms select, %v %v over every node", label, got.Status, got.result, want.Status, want.result)
	}
	if g, w := got.state.GetSkipFilterPlugins(), want.state.GetSkipFilterPlugins(); !g.Equal(w) {
		t.Fatalf("%s: plugins skipped %v over the nodes its terms select, %v over every node", label, g, w)
	}
	g, gerr := got.state.Read(affinityStateKey)
	w, werr := want.state.Read(affinityStateKey)
	if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: inter-pod affinity state\n%+v (%v) over the nodes its terms select\n%+v (%v) over every node", label, g, gerr, w, werr)
	}
	refused := false
	for _, ni := range whole.Snapshot().Infos() {
		gs, ws := narrowed.Filter(ctx, got, ni), whole.Filter(ctx, want, ni)
		if !reflect.DeepEqual(gs, ws) {
			t.Fatalf("%s: node %s: Filter %v over the nodes its terms select, %v over every node", label, ni.Node().Name, gs, ws)
		}
		refused = refused || (ws != nil && ws.Plugin() == names.InterPodAffinity)
	}
	return refused
}

// TestAffinityPreFilterReadsOnlyTheNodesItsTermsSelect is the label
// index's property: on random clusters of pods in several namespaces
// (one without its Namespace object), with random labels, changed pod by
// pod and node by node inside and outside forks, a pod's PreFilter over
// only the nodes its affinity terms may select leaves the same state as
// the inter-pod affinity plugin's over every node, and Filter and the
// placements of pod groups say the same of every node.
func TestAffinityPreFilterReadsOnlyTheNodesItsTermsSelect(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var objects []*corev1.Namespace
	client := fake.NewClientset()
	for _, ns := range namespaceObjects() {
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, ns)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	listers, err := factorylisters.New(factory)
	if err != nil {
		t.Fatal(err)
	}
	narrowedChecks, fewer, refused := 0, 0, 0
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 29))
		snap, _ := labelCluster(t, r)
		narrowed, err := newChecker(ctx, snap, listers, newPluginLister(snap))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := newChecker(ctx, snap, listers, nil)
		if err != nil {
			t.Fatal(err)
		}
		if seed == 0 {
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			if n, err := factory.Core().V1().Namespaces().Lister().List(labels.Everything()); err != nil || len(n) != len(objects) {
				t.Fatalf("the namespace lister holds %d namespaces (%v), want %d", len(n), err, len(objects))
			}
		}
		serial := 0
		for step := range 30 {
			change(t, r, snap, &serial)
			pod := withTerms(r, labelledPod(r))
			label := fmt.Sprintf("seed %d, step %d, pod %s/%s %+v", seed, step, pod.Namespace, pod.Name, pod.Spec.Affinity)
			if only, ok := snap.affinityNodes(pod); ok && !hardSpread(pod) {
				narrowedChecks++
				if len(only) < snap.Len() {
					fewer++
				}
			}
			if compareChecks(t, ctx, label, narrowed, whole, pod) {
				refused++
			}
		}
		var pending []*corev1.Pod
		for range 1 + r.IntN(4) {
			app := withTerms(r, labelledPod(r))
			for range 1 + r.IntN(5) {
				p := app.DeepCopy()
				p.Name = p.Name + "-" + simtest.Suffix(r, 5)
				p.UID = types.UID(p.Namespace + "/" + p.Name)
				pending = append(pending, p)
			}
		}
		groups := NewEquivalenceKeys().Group(pending)
		got, want := placeAll(t, narrowed, groups, true), placeAll(t, whole, groups, true)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: placed %v with the checks over the nodes the terms select, %v over every node", seed, got, want)
		}
		for snap.Forked() {
			snap.Revert()
		}
	}
	// The property means something only if the narrowing happened, left
	// nodes out, and the plugin's state refused nodes.
	if narrowedChecks == 0 || fewer == 0 || refused == 0 {
		t.Fatalf("%d checks narrowed, %d to fewer than every node, %d with nodes refused by pod affinity: the random clusters do not exercise it",
			narrowedChecks, fewer, refused)
	}
	t.Logf("%d checks narrowed, %d to fewer than every node, %d with nodes refused by pod affinity", narrowedChecks, fewer, refused)
}

// TestScopeOfATerm: where the pods a term may select are looked for, by
// its selector's operators and its namespaces.
func TestScopeOfATerm(t *testing.T) {
	sel := func(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: reqs}
	}
	req := func(op metav1.LabelSelectorOperator, key string, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	cases := []struct {
		name string
		term corev1.PodAffinityTerm
		// want is "namespaces key=values", "none" or "" for every node.
		want string
	}{
		{"match labels, the pod's namespace", corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			"[ns] app=[web]"},
		{"In, named namespaces", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpIn, "app", "web", "db")), Namespaces: []string{"a", "b"}},
			"[a b] app=[db web]"},
		{"Exists: any value", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpExists, "tier"))}, "[ns] tier=*"},
		{"a value requirement wins over Exists", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpExists, "tier"), req(metav1.LabelSelectorOpIn, "app", "web"))},
			"[ns] app=[web]"},
		{"empty namespace selector: any namespace", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpIn, "app", "web")),
			NamespaceSelector: &metav1.LabelSelector{}}, "* app=[web]"},
		{"namespace selector and names: any namespace", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpIn, "app", "web")),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, Namespaces: []string{"a"}}, "* app=[web]"},
		{"NotIn only: every node", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpNotIn, "app", "web"))}, ""},
		{"DoesNotExist only: every node", corev1.PodAffinityTerm{LabelSelector: sel(req(metav1.LabelSelectorOpDoesNotExist, "app"))}, ""},
		{"empty selector: every node", corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{}}, ""},
		{"no selector: no pod", corev1.PodAffinityTerm{}, "none"},
	}
	pod := testPod("web", "1")
	for _, tc := range cases {
		terms, err := fwk.GetAffinityTerms(pod, []corev1.PodAffinityTerm{tc.term})
		if err != nil {
			t.Fatal(err)
		}
		sc, ok := scopeOf(terms[0])
		got := ""
		switch {
		case ok && sc.none:
			got = "none"
		case ok:
			ns := "*"
			if sc.namespaces != nil {
				ns = fmt.Sprint(sets.List(sc.namespaces))
			}
			values := "*"
			if sc.values != nil {
				sorted := slices.Clone(sc.values)
				slices.Sort(sorted)
				values = fmt.Sprint(sorted)
			}
			got = fmt.Sprintf("%s %s=%s", ns, sc.key, values)
		}
		if got != tc.want {
			t.Errorf("%s: scope %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPreFiltersInParallel: PreFilters run in parallel on one checker (the
// scale-down plan checks the pods of its candidates ahead on every core),
// pods whose affinity terms narrow the node list among pods with a
// topology spread constraint the Filter enforces, which read every node:
// each check says of every node what a check run alone over every node
// says. Run with the race detector, it also finds a narrowing another
// PreFilter could see.
func TestPreFiltersInParallel(t *testing.T) {
	ctx := context.Background()
	narrowedChecks := 0
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 31))
		snap, _ := labelCluster(t, r)
		narrowed, err := newChecker(ctx, snap, nil, newPluginLister(snap))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := newChecker(ctx, snap, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pods := make([]*corev1.Pod, 32)
		for i := range pods {
			p := labelledPod(r)
			if i%2 == 0 {
				p = withTerms(r, p)
			} else {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod-template-hash": p.Labels["pod-template-hash"]}}}}
			}
			if narrows(p) {
				narrowedChecks++
			}
			pods[i] = p
		}
		// As callers in parallel do: the lazily built lists first.
		if _, err := snap.NodeInfos().HavePodsWithAffinityList(); err != nil {
			t.Fatal(err)
		}
		got := make([]*PodCheck, len(pods))
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < len(pods); i += 4 {
					pc, err := narrowed.PreFilter(ctx, pods[i])
					if err != nil {
						t.Error(err)
						return
					}
					got[i] = pc
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for i, pod := range pods {
			want, err := whole.PreFilter(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			for _, ni := range snap.Infos() {
				if gs, ws := narrowed.Filter(ctx, got[i], ni), whole.Filter(ctx, want, ni); !reflect.DeepEqual(gs, ws) {
					t.Fatalf("seed %d, pod %s/%s: node %s: Filter %v after PreFilters in parallel, %v alone over every node",
						seed, pod.Namespace, pod.Name, ni.Node().Name, gs, ws)
				}
			}
		}
	}
	if narrowedChecks == 0 {
		t.Fatal("no pod narrowed the node list: the test exercises nothing")
	}
}
