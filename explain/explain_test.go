package explain

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/tidal-autoscaler/tidal/core"
)

// One iteration over testdata/cluster.yaml: the two 6-cpu train pods fit
// large (2 nodes) and xlarge (1 node), least-waste picks xlarge; the
// 16-cpu pod fits no group; small-c is empty, small-a kept by web's PDB,
// small-b by cache-0's safe-to-evict annotation.
func TestDecisionsOnFixture(t *testing.T) {
	d := fixtureDecisions(t)
	ups := d.ScaleUp.ScaleUps
	if len(ups) != 1 {
		t.Fatalf("scale-ups %+v, want one", ups)
	}
	up := ups[0]
	if up.NodeGroup != "xlarge" || up.Nodes != 1 || up.From != 1 || len(up.Pods) != 2 {
		t.Errorf("scale-up %+v, want xlarge 1 -> 2 for the 2 train pods", up)
	}
	if len(up.Options) != 2 || len(up.Expander) == 0 || up.Expander[len(up.Expander)-1].Strategy != "least-waste" {
		t.Errorf("options %+v expander %+v, want large and xlarge offered and least-waste choosing", up.Options, up.Expander)
	}
	if !slices.ContainsFunc(up.Rejected["small"], func(r string) bool { return strings.HasPrefix(r, "Insufficient cpu (needs ") }) {
		t.Errorf("rejected %v, want small rejecting for cpu, with the numbers", up.Rejected)
	}
	no := d.ScaleUp.NoScaleUp
	if len(no) != 1 || no[0].Pods[0] != "ml/huge" || len(no[0].Reasons) != 3 || !slices.Contains(no[0].Reasons["xlarge"], "Insufficient cpu (needs 16, free 15.9)") {
		t.Errorf("no scale-up %+v, want ml/huge refused by all 3 groups, xlarge for cpu (needs 16, free 15.9)", no)
	}
	if u := d.ScaleDown.Unneeded; len(u) != 1 || u[0].Node != "small-c" || !u[0].Empty {
		t.Errorf("unneeded %+v, want small-c, empty", u)
	}
	for _, g := range d.NodeGroups {
		if g.Health != "Healthy" {
			t.Errorf("node group %+v after the decision, want it healthy: deciding asks the cloud for nothing", g)
		}
	}
	if len(d.ScaleUp.Refused) > 0 {
		t.Errorf("groups %v refused to grow, want none asked", d.ScaleUp.Refused)
	}
	blockers := map[string]string{}
	for _, u := range d.ScaleDown.Unremovable {
		blockers[u.Node] = u.Pod + " " + u.Blocker
	}
	if blockers["small-a"] != "shop/web-6d4f9c7b8-x2k4q NotEnoughPdb" || blockers["small-b"] != "shop/cache-0 NotSafeToEvictAnnotation" {
		t.Errorf("blockers %v, want small-a kept by the web PDB and small-b by cache-0's annotation", blockers)
	}
}

func TestAnswersOnFixture(t *testing.T) {
	d := fixtureDecisions(t)
	client := fake.NewClientset(loadFixture(t).Objects...)
	ask := func(f func(w *bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	pod := func(ns, name string) string {
		return ask(func(w *bytes.Buffer) error { return Pod(context.Background(), client, d, ns, name, w) })
	}
	node := func(name string) string {
		return ask(func(w *bytes.Buffer) error { return Node(context.Background(), client, d, name, w) })
	}
	for _, tc := range []struct{ got, want string }{
		{pod("ml", "train-5b8c7d9f4-abcde"), "grows node group xlarge by 1 node(s) (1 -> 2)"},
		{pod("ml", "train-5b8c7d9f4-abcde"), "Expander: least-waste kept [xlarge]"},
		{pod("ml", "train-5b8c7d9f4-abcde"), "small: Insufficient cpu"},
		{pod("ml", "huge"), "no node group can host it:\n    large: Insufficient cpu"},
		{pod("shop", "cache-0"), "runs on node small-b"},
		{pod("ml", "nothere"), "Pod ml/nothere not found."},
		{node("small-a"), "cannot be removed: pod shop/web-6d4f9c7b8-x2k4q blocks it (NotEnoughPdb: PodDisruptionBudget web allows 0 more disruption(s))"},
		{node("small-b"), "NotSafeToEvictAnnotation: cluster-autoscaler.kubernetes.io/safe-to-evict=false"},
		{node("small-c"), "Node small-c (node group small) can be removed"},
		{node("nothere"), "Node nothere not found."},
		{ask(func(w *bytes.Buffer) error { return NodeGroup(d, "gone", w) }), "the node groups are: large, small, xlarge"},
		{ask(func(w *bytes.Buffer) error { return Simulate(d, w) }), "Grow xlarge by 1 node(s) (1 -> 2) for 2 pod(s), picked by least-waste"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("answer:\n%s\nwant it to contain %q", tc.got, tc.want)
		}
	}
}

// A node of no group is never removed, and the answer says so.
func TestNodeOfNoGroup(t *testing.T) {
	s := loadFixture(t)
	client := fake.NewClientset(s.Objects...)
	d := &core.Decisions{Healthy: true, NodeGroupOfNode: map[string]string{}}
	var b bytes.Buffer
	if err := Node(context.Background(), client, d, "small-a", &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "belongs to no node group") {
		t.Errorf("answer %q, want it to say the node is in no group", b.String())
	}
}

// A node being replaced is answered as such, with why and by when, ahead
// of what scale-down thinks of it.
func TestNodeBeingReplaced(t *testing.T) {
	d := &core.Decisions{Healthy: true, ScaleDown: core.ScaleDownDecisions{Planned: true},
		Replacing: []core.ReplacingEntry{
			{Node: "a", NodeGroup: "spot", Cause: "spot-interruption", Detail: "terminate", State: core.ReplacingDraining, Deadline: "2026-11-28T09:02:00Z"},
			{Node: "b", NodeGroup: "od", Cause: "expired", State: core.ReplacingWaitingForCapacity},
		}}
	for _, tc := range []struct{ node, group, want string }{
		{"a", "spot", "Node a (node group spot) is being replaced: spot-interruption (terminate); cordoned, drained, then deleted, by 2026-11-28T09:02:00Z."},
		{"b", "od", "Node b (node group od) is being replaced: expired; it stays until the capacity asked for its pods is Ready."},
	} {
		if got := nodeAnswer(d, tc.node, tc.group); got != tc.want {
			t.Errorf("answer %q, want %q", got, tc.want)
		}
	}
}
