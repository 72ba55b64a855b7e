package scaleup

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// churn is a generated cluster, as tidal's informers hold it, that random
// changes are made to, as informer events bring them to the node loop.
type churn struct {
	t       *testing.T
	r       *rand.Rand
	snap    *simulator.Snapshot
	pending []*corev1.Pod
	groups  []Group
	// notReady are nodes that cannot take pods yet.
	notReady map[string]bool
	// cleared maps pending pods whose nomination was cleared to the node
	// it named (Input.Cleared).
	cleared map[types.UID]string
	made    int
}

// TestIncrementalDecisionIsTheWholeDecision is the property of DecideFrom:
// after any sequence of changes (pending pods added, removed or bound,
// new workloads among them, some kept apart per zone, running pods
// removed, nodes added (some with another's hostname label), removed or
// not ready, nodes requested, registered nodes starting (not ready, behind
// a startup taint, or ready) and done starting, pending pods nominated to
// a starting node and their nominations cleared (Input.Cleared, naming the
// starting node or a ready one), and objects replaced by equal ones with a
// new resource version, as a resync or a status update brings them), the
// decision made
// from the last one's Reuse is the decision made from scratch. Clusters are
// benchgen's, as the API server stores them (default tolerations with
// tolerationSeconds, a random kube-api-access volume per new pod, managed
// fields), pods in a new lister order every time.
func TestIncrementalDecisionIsTheWholeDecision(t *testing.T) {
	ctx := context.Background()
	reused, resumed, searched, changes, carried, kept, older := 0, 0, 0, 0, 0, 0, 0
	// clearedHome counts cleared pods placed on the ready node their
	// nomination named, awaitingOn pods placed on a starting node's copy.
	clearedHome, awaitingOn := 0, 0
	// waited counts pods placed on the copies of the group they waited for.
	waited := 0
	for seed := range uint64(5) {
		p := benchgen.S1()
		p.Seed, p.N, p.M, p.P, p.G, p.K = 100+seed, 40, 12, 200+40*int(seed), 8+int(seed), 4
		c := benchload.Cluster(t, p)
		ch := &churn{t: t, r: rand.New(rand.NewPCG(seed, 29)), pending: slices.Clone(c.PendingPods), notReady: map[string]bool{},
			cleared: map[types.UID]string{}}
		ch.snap = benchload.Snapshot(t, c, ch.r)
		checker := benchload.Checker(t, ch.snap)
		for i, tmpl := range benchload.Templates(t, c) {
			g := c.NodeGroups[i]
			ch.groups = append(ch.groups, Group{ID: g.ID, Template: tmpl, Min: g.MinSize, Max: g.MaxSize, Target: g.TargetSize})
		}
		chain, _ := expander.ParseChain("least-waste")
		keys := simulator.NewEquivalenceKeys()
		var last, before Reuse
		var history []string
		// waiting are the pods the last decision helped, with their group,
		// as the node loop hands them to the next (Input.Waiting).
		var waiting map[types.UID]string
		for step := range 30 {
			if step > 0 {
				for range 1 + ch.r.IntN(3) {
					history = append(history, ch.change())
					changes++
				}
			}
			in := Input{Checker: checker, Pending: keys.Group(loopOrder(benchgen.ListerOrder(ch.r, ch.pending))),
				Groups: slices.Clone(ch.groups), NotReady: maps.Clone(ch.notReady), Cleared: maps.Clone(ch.cleared), Chain: chain,
				ExpanderContext: &expander.Context{Seed: 1}, Limits: Limits{MaxNodesPerScaleUp: 1000}, Waiting: waiting}
			inc, next, err := DecideFrom(ctx, in, last)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Decide(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := describe(inc), describe(whole); a != b {
				t.Fatalf("seed %d, step %d, after %s:\nincremental decision (%d groups reused):\n%s\nfrom scratch:\n%s",
					seed, step, strings.Join(history[max(0, len(history)-3):], "; "), inc.ReusedGroups, a, b)
			}
			// A Reuse is a value: the one from the decision before the
			// last still gives the whole decision, though the decisions
			// since share its nodes' memoized fingerprints.
			if step%3 == 2 {
				again, _, err := DecideFrom(ctx, in, before)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := describe(again), describe(whole); a != b {
					t.Fatalf("seed %d, step %d, from the Reuse before the last:\n%s\nfrom scratch:\n%s", seed, step, a, b)
				}
				older += again.ReusedGroups + again.ResumedGroups
			}
			for _, pl := range inc.OnExisting {
				if in.Cleared[pl.Info.GetPod().UID] == pl.Node {
					clearedHome++
				}
			}
			awaitingOn += len(inc.AwaitingOn)
			for uid, g := range inc.Awaiting {
				if in.Waiting[uid] == g {
					waited++
				}
			}
			waiting = inc.Helped()
			reused += inc.ReusedGroups
			resumed += inc.ResumedGroups
			carried += inc.CarriedChecks
			kept += inc.keptChecks
			searched += len(in.Pending) - inc.ReusedGroups - inc.ResumedGroups
			before, last = last, next
		}
	}
	// The property means something only if groups were reused, reused in
	// part and searched afresh.
	// Carried checks are those of groups with pod anti-affinity, brought
	// up to date with the changes (pods with anti-affinity bound and
	// removed among them).
	// Kept checks are those of groups reused wholly with pods left, whose
	// check looked at the nodes that changed; older counts the groups
	// reused from the Reuse before the last.
	if reused == 0 || resumed == 0 || searched == 0 || clearedHome == 0 || awaitingOn == 0 || carried == 0 || kept == 0 || older == 0 || waited == 0 {
		t.Fatalf("%d groups reused, %d in part, %d searched, %d cleared pods placed on their ready node, %d on a starting node, %d checks carried, %d kept for the pods left, %d groups reused from an older Reuse, %d pods on their waited group's copies: the changes do not exercise the reuse",
			reused, resumed, searched, clearedHome, awaitingOn, carried, kept, older, waited)
	}
	t.Logf("%d changes: %d pod groups' placements reused, %d in part, %d searched afresh, %d cleared pods placed on their ready node, %d on a starting node's copy, %d group checks carried from the last, %d kept for the pods left, %d groups reused from the Reuse before the last, %d pods on their waited group's copies, the same decisions as from scratch",
		changes, reused, resumed, searched, clearedHome, awaitingOn, carried, kept, older, waited)
}

// change makes one random change and says what it was.
func (ch *churn) change() string {
	infos := ch.snap.Infos()
	switch k := ch.r.IntN(17); {
	case k < 3 && len(ch.pending) > 0:
		p := ch.newPod(ch.pending[ch.r.IntN(len(ch.pending))], ch.r.IntN(4) == 0)
		ch.pending = append(ch.pending, p)
		return "pod " + p.Name + " added"
	case k == 3 && len(ch.pending) > 0:
		i := ch.r.IntN(len(ch.pending))
		name := ch.pending[i].Name
		ch.pending = slices.Delete(ch.pending, i, i+1)
		return "pending pod " + name + " removed"
	case k == 4 && len(ch.pending) > 0:
		i := ch.r.IntN(len(ch.pending))
		p := ch.pending[i].DeepCopy()
		ch.pending = slices.Delete(ch.pending, i, i+1)
		node := infos[ch.r.IntN(len(infos))].Node().Name
		p.Spec.NodeName, p.Status.Phase, p.ResourceVersion = node, corev1.PodRunning, ch.version()
		ch.must(ch.snap.AddPod(podInfo(ch.t, p), node))
		return "pod " + p.Name + " bound to " + node
	case k == 5:
		ni := infos[ch.r.IntN(len(infos))]
		if pods := ni.GetPods(); len(pods) > 0 {
			pod := pods[ch.r.IntN(len(pods))].GetPod()
			ch.must(ch.snap.RemovePod(pod, ni.Node().Name))
			return "running pod " + pod.Name + " removed from " + ni.Node().Name
		}
		return "nothing"
	case k == 6:
		n := infos[ch.r.IntN(len(infos))].Node().DeepCopy()
		ch.made++
		n.Name, n.UID, n.ResourceVersion = fmt.Sprintf("added-%d", ch.made), types.UID(fmt.Sprintf("uid-node-%d", ch.made)), ch.version()
		if ch.r.IntN(4) > 0 {
			// Else the copy keeps the hostname label of its original.
			n.Labels[corev1.LabelHostname] = n.Name
		}
		_, err := ch.snap.AddNode(n)
		ch.must(err)
		return "node " + n.Name + " added"
	case k == 7 && len(infos) > 10:
		name := infos[ch.r.IntN(len(infos))].Node().Name
		ch.must(ch.snap.RemoveNode(name))
		delete(ch.notReady, name)
		for i := range ch.groups {
			ch.groups[i].Starting = slices.DeleteFunc(slices.Clone(ch.groups[i].Starting), func(s string) bool { return s == name })
		}
		return "node " + name + " removed"
	case k == 8:
		// A resync or a status update: an equal object, a new version.
		ni := ch.snap.NodeInfo(infos[ch.r.IntN(len(infos))].Node().Name)
		n := ni.Node().DeepCopy()
		n.ResourceVersion = ch.version()
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "Heartbeat", LastHeartbeatTime: metav1.Now()})
		what := "updated alike"
		if ch.r.IntN(4) == 0 {
			// Relabelled: the hostname of some node (perhaps another's,
			// perhaps its own name again), the nodes in the same order.
			n.Labels[corev1.LabelHostname] = infos[ch.r.IntN(len(infos))].Node().Name
			what = "updated, the node's hostname " + n.Labels[corev1.LabelHostname]
		}
		ni.SetNode(n)
		ch.snap.Touch()
		if len(ch.pending) > 0 {
			i := ch.r.IntN(len(ch.pending))
			ch.pending[i] = ch.pending[i].DeepCopy()
			ch.pending[i].ResourceVersion = ch.version()
		}
		return "node " + n.Name + " and a pending pod " + what
	case k == 9:
		g := &ch.groups[ch.r.IntN(len(ch.groups))]
		g.Upcoming = max(0, g.Upcoming+ch.r.IntN(3)-1)
		return fmt.Sprintf("group %s has %d nodes upcoming", g.ID, g.Upcoming)
	case k == 10:
		name := infos[ch.r.IntN(len(infos))].Node().Name
		ch.notReady[name] = !ch.notReady[name]
		return fmt.Sprintf("node %s not ready: %v", name, ch.notReady[name])
	case k >= 11:
		return ch.nominationChange(k - 11)
	default:
		return "nothing"
	}
}

// nominationChange makes one random change to the registered nodes still
// starting and the pods nominated to them.
func (ch *churn) nominationChange(k int) string {
	infos := ch.snap.Infos()
	switch {
	case k == 0:
		g := &ch.groups[ch.r.IntN(len(ch.groups))]
		name := infos[ch.r.IntN(len(infos))].Node().Name
		if ch.isStarting(name) {
			return "nothing"
		}
		// Registered, counted as upcoming: its copy stands for it.
		g.Starting, g.Upcoming = append(slices.Clone(g.Starting), name), g.Upcoming+1
		how := "ready"
		switch ch.r.IntN(3) {
		case 0:
			ch.notReady[name], how = true, "not ready"
		case 1:
			ch.setTaint(name, true)
			how = "behind a startup taint"
		}
		return fmt.Sprintf("node %s starting in group %s, %s", name, g.ID, how)
	case k == 1:
		g := &ch.groups[ch.r.IntN(len(ch.groups))]
		if len(g.Starting) == 0 {
			return "nothing"
		}
		i := ch.r.IntN(len(g.Starting))
		name := g.Starting[i]
		g.Starting, g.Upcoming = slices.Delete(slices.Clone(g.Starting), i, i+1), max(0, g.Upcoming-1)
		delete(ch.notReady, name)
		ch.setTaint(name, false)
		return "node " + name + " done starting"
	case k == 2 && len(ch.pending) > 0:
		node := ch.someStarting()
		if node == "" {
			return "nothing"
		}
		i := ch.r.IntN(len(ch.pending))
		p := ch.pending[i].DeepCopy()
		ch.pending = slices.Delete(ch.pending, i, i+1)
		p.Status.NominatedNodeName, p.ResourceVersion = node, ch.version()
		ch.must(ch.snap.AddPod(podInfo(ch.t, p), node))
		delete(ch.cleared, p.UID)
		return "pod " + p.Name + " nominated to " + node
	case k == 3:
		for _, ni := range infos {
			for _, pi := range ni.GetPods() {
				if p := pi.GetPod(); p.Spec.NodeName == "" && ch.r.IntN(2) == 0 {
					ch.must(ch.snap.RemovePod(p, ni.Node().Name))
					p = p.DeepCopy()
					p.Status.NominatedNodeName, p.ResourceVersion = "", ch.version()
					ch.pending = append(ch.pending, p)
					ch.cleared[p.UID] = ni.Node().Name
					return "the nomination of " + p.Name + " to " + ni.Node().Name + " cleared"
				}
			}
		}
		return "nothing"
	case k == 4 && len(ch.pending) > 0:
		p := ch.pending[ch.r.IntN(len(ch.pending))]
		if _, ok := ch.cleared[p.UID]; ok {
			delete(ch.cleared, p.UID)
			return "the cleared nomination of " + p.Name + " forgotten"
		}
		// A nomination cleared from a node that can take pods.
		node := infos[ch.r.IntN(len(infos))].Node().Name
		ch.cleared[p.UID] = node
		return "the nomination of " + p.Name + " to " + node + " cleared"
	default:
		return "nothing"
	}
}

// isStarting tells whether a group names node as starting.
func (ch *churn) isStarting(node string) bool {
	for _, g := range ch.groups {
		if slices.Contains(g.Starting, node) {
			return true
		}
	}
	return false
}

// someStarting names a random starting node still in the snapshot, or "".
func (ch *churn) someStarting() string {
	var all []string
	for _, g := range ch.groups {
		for _, name := range g.Starting {
			if ch.snap.NodeInfo(name) != nil {
				all = append(all, name)
			}
		}
	}
	if len(all) == 0 {
		return ""
	}
	return all[ch.r.IntN(len(all))]
}

// startupTaint keeps pods off a registered node until it is set up.
var startupTaint = corev1.Taint{Key: "node.example.com/startup", Effect: corev1.TaintEffectNoSchedule}

// setTaint puts the startup taint on the node or takes it off, as a new
// node object (none when it has it already, or has not).
func (ch *churn) setTaint(name string, on bool) {
	ni := ch.snap.NodeInfo(name)
	if ni == nil {
		return
	}
	if slices.ContainsFunc(ni.Node().Spec.Taints, func(t corev1.Taint) bool { return t.Key == startupTaint.Key }) == on {
		return
	}
	n := ni.Node().DeepCopy()
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == startupTaint.Key })
	if on {
		n.Spec.Taints = append(n.Spec.Taints, startupTaint)
	}
	n.ResourceVersion = ch.version()
	ni.SetNode(n)
	ch.snap.Touch()
}

// newPod is a new replica of like, or of a new workload with other
// requests.
func (ch *churn) newPod(like *corev1.Pod, newApp bool) *corev1.Pod {
	ch.made++
	p := simtest.NewReplica(like, ch.made, ch.r)
	if newApp {
		p.Labels = map[string]string{"app": fmt.Sprintf("new-%d", ch.made)}
		if ch.r.IntN(3) == 0 {
			// Kept apart per zone: whether a node takes the pod depends
			// on the other nodes of its zone.
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelTopologyZone,
				}},
			}}
		}
		p.OwnerReferences = nil
		c := &p.Spec.Containers[0]
		c.Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(100*(1+ch.r.IntN(30))), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(1+ch.r.IntN(8))<<28, resource.BinarySI),
		}
	}
	return p
}

func (ch *churn) version() string { ch.made++; return fmt.Sprint(1_000_000 + ch.made) }

func (ch *churn) must(err error) {
	if err != nil {
		ch.t.Fatal(err)
	}
}

func podInfo(t testing.TB, p *corev1.Pod) *framework.PodInfo {
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// describe is everything a plan says, pods by UID.
func describe(p *Plan) string {
	var b strings.Builder
	uids := func(pods []*corev1.Pod) []types.UID {
		out := make([]types.UID, len(pods))
		for i, p := range pods {
			out[i] = p.UID
		}
		return out
	}
	for _, u := range p.ScaleUps {
		fmt.Fprintf(&b, "scale-up %s %d→%d (max %d, balanced %v) for %v; chosen %s by %+v; estimates %+v; rejected %v\n",
			u.Group, u.From, u.To, u.Max, u.Balanced, uids(u.Pods), u.Decision.Best.NodeGroup, u.Decision.Steps, u.Estimates, u.Rejected)
	}
	fmt.Fprintf(&b, "fit existing %d, skipped %d, planner %q, greedy %d\n", p.FitExisting, p.Skipped, p.Planner, p.GreedyNodes)
	for _, pl := range p.OnExisting {
		fmt.Fprintf(&b, "on %s: %s\n", pl.Node, pl.Info.GetPod().UID)
	}
	for _, uid := range slices.Sorted(maps.Keys(p.Awaiting)) {
		fmt.Fprintf(&b, "awaiting %s (on %q): %s\n", p.Awaiting[uid], p.AwaitingOn[uid], uid)
	}
	fmt.Fprintf(&b, "scheduler nodes %d, plan nodes %d\n", p.SchedulerNodes, p.PlanNodes)
	for _, n := range p.NoScaleUp {
		fmt.Fprintf(&b, "no scale-up for %v of %s: %v %v\n", uids(n.Pods), n.Group.Key, n.Reasons, n.ByNodeGroup)
	}
	for _, g := range p.Unfinished {
		fmt.Fprintf(&b, "unfinished %s\n", g.Key)
	}
	return b.String()
}

// TestMovedAreTheNodesOutOfOrder: the nodes that keep their earlier order
// are a longest run of them, so that a node removed from the snapshot,
// whose place the last node takes, moves that one node only.
func TestMovedAreTheNodesOutOfOrder(t *testing.T) {
	for _, c := range []struct {
		seq   []int
		moved int
	}{
		{nil, 0},
		{[]int{0, 1, 2, 3}, 0},
		{[]int{0, 4, 2, 3}, 1},    // node 1 removed, node 4 swapped into its place
		{[]int{0, 2, 3, 4, 1}, 1}, // node 1 moved to the end
		{[]int{3, 2, 1, 0}, 3},
		{[]int{1, 0, 3, 2, 5, 4}, 3},
	} {
		out := moved(c.seq)
		var kept []int
		for _, v := range c.seq {
			if !slices.Contains(out, v) {
				kept = append(kept, v)
			}
		}
		if len(out) != c.moved || !slices.IsSorted(kept) {
			t.Errorf("moved(%v) = %v, leaving %v: want %d moved and the rest in order", c.seq, out, kept, c.moved)
		}
	}
	if got := moved([]int{0, 4, 2, 3}); !slices.Equal(got, []int{4}) {
		t.Errorf("the node swapped into a removed one's place: moved %v, want [4]", got)
	}
}

// TestReuseTakesAgainWhatAChangeDidNotTouch: which pod groups' placements
// a change leaves to reuse, wholly or up to the first node it changed, and
// that the decision is the one made from scratch.
func TestReuseTakesAgainWhatAChangeDidNotTouch(t *testing.T) {
	c := newCluster(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		c.node(n, "4", "16Gi", "a")
	}
	c.pend(2, "a", "1", "1Gi", nil) // on n1
	c.pend(3, "b", "1", "1Gi", nil) // two on n1, one on n2
	decide := reusing(t, c, nil)
	decide("first decision", 0, 0)
	decide("nothing changed", 2, 0)
	addRunning := func(node, cpu string) {
		p := c.pod("running", cpu, "1Gi")
		p.Spec.NodeName = node
		if err := c.snap.AddPod(podInfo(t, p), node); err != nil {
			t.Fatal(err)
		}
	}
	addRunning("n3", "1")
	decide("a pod bound to n3, which no group reached", 2, 0)
	addRunning("n2", "3")
	decide("n2, where b's third pod went, filled", 1, 1)
	c.pend(1, "b", "1", "1Gi", nil)
	decide("a pod of b added", 1, 1)
	c.pending = c.pending[1:]
	decide("a's first pod gone: a's search starts where that pod went; b, on the node it left, searched afresh", 0, 1)
	c.pending = c.pending[1:]
	decide("a gone", 0, 0)
}

// reusing returns a function that decides from the last decision's Reuse,
// checks the plan against one made from scratch and the count of pod
// groups reused, wholly and in part; cleared, when set, is Input.Cleared.
func reusing(t *testing.T, c *cluster, cleared map[types.UID]string) func(change string, reused, resumed int) {
	chain, _ := expander.ParseChain("least-waste")
	keys := simulator.NewEquivalenceKeys()
	var last Reuse
	return func(change string, reused, resumed int) {
		t.Helper()
		in := Input{Checker: c.checker, Pending: keys.Group(c.pending), Groups: c.groups, Chain: chain, ExpanderContext: &expander.Context{Seed: 7},
			Cleared: maps.Clone(cleared)}
		plan, next, err := DecideFrom(context.Background(), in, last)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if describe(plan) != describe(whole) {
			t.Fatalf("%s: the decision made from the last one's differs from scratch:\n%s\nfrom scratch:\n%s", change, describe(plan), describe(whole))
		}
		if plan.ReusedGroups != reused || plan.ResumedGroups != resumed {
			t.Errorf("%s: %d groups reused and %d in part, want %d and %d", change, plan.ReusedGroups, plan.ResumedGroups, reused, resumed)
		}
		last = next
	}
}

// TestReuseSeesTheClearedPods: the pods of Input.Cleared, placed on their
// node before any group, make that node one that changed for the groups
// whose search reaches it, when they go there and when they no longer do.
func TestReuseSeesTheClearedPods(t *testing.T) {
	c := newCluster(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		c.node(n, "4", "16Gi", "a")
	}
	c.pend(3, "a", "1", "1Gi", nil) // on n1
	c.pend(2, "b", "2", "1Gi", nil) // on n2
	b2 := c.pending[4].UID
	cleared := map[types.UID]string{}
	decide := reusing(t, c, cleared)
	decide("first decision", 0, 0)
	decide("nothing changed", 2, 0)
	cleared[b2] = "n3"
	decide("b's second pod's nomination to n3 cleared: it goes there first; a's search does not reach n3, b keeps its first pod on n2", 1, 1)
	decide("nothing changed since", 2, 0)
	cleared[b2] = "n1"
	decide("b's second pod's nomination to n1 cleared: it goes there first and a, which fits n1, is searched afresh, b too", 0, 0)
	delete(cleared, b2)
	decide("the cleared nomination forgotten: n1 has the room again", 0, 0)
	decide("nothing changed since", 2, 0)
}

// TestUniqueHostnamesFollowTheNodeObjects checks that the ready nodes'
// hostnames, shared from the last filter while the nodes are the same
// objects in the same order, are taken afresh from a node object that
// replaced another (a relabelled node), and that the other nodes count.
func TestUniqueHostnamesFollowTheNodeObjects(t *testing.T) {
	nodes := func(names ...string) []fwk.NodeInfo {
		var out []fwk.NodeInfo
		for _, n := range names {
			ni := framework.NewNodeInfo()
			ni.SetNode(nodeObj(n, "4", "16Gi", "a"))
			out = append(out, ni)
		}
		return out
	}
	ready := nodes("a", "b", "c")
	first := listNodes(ready, nodeList{})
	relabelled := slices.Clone(ready)
	n := ready[2].Node().DeepCopy()
	n.Labels[corev1.LabelHostname] = "a"
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	relabelled[2] = ni
	cases := []struct {
		name   string
		ready  []fwk.NodeInfo
		prev   nodeList
		others []fwk.NodeInfo
		want   bool
	}{
		{"afresh", ready, nodeList{}, nil, true},
		{"the same objects", ready, first, nil, true},
		{"a node relabelled to another's hostname", relabelled, first, nil, false},
		{"another node with a ready node's hostname", ready, first, nodes("b"), false},
		{"other nodes with one hostname", ready, first, nodes("d", "d"), false},
		{"other nodes of their own", ready, first, nodes("d", "e"), true},
	}
	for _, tc := range cases {
		if got := uniqueHostnames(listNodes(tc.ready, tc.prev), tc.others); got != tc.want {
			t.Errorf("%s: unique %v, want %v", tc.name, got, tc.want)
		}
	}
}
