package scaledown

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// plannerCluster is a cluster of pods as the API server stores them: a big
// node that stays, three small candidates, two nodes being deleted, and a
// pod on c being deleted whose ReplicaSet is gone (it holds c until its
// grace period has passed).
func plannerCluster(t *testing.T) (*cluster, Input) {
	c := newCluster(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []string{"stay", "x1", "x2"} {
		c.node(n, "16")
	}
	for _, n := range []string{"a", "b", "c"} {
		c.node(n, "4")
		c.pod(n, "web", "1", func(p *corev1.Pod) { simtest.Admit(p, r) })
	}
	c.pod("c", "api", "500m", func(p *corev1.Pod) {
		simtest.Admit(p, r)
		p.OwnerReferences[0].Name = "api-old"
		p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-10 * time.Second)))
		p.DeletionGracePeriodSeconds = ptr.To[int64](30)
	})
	in := Input{
		Checker: c.checker, Groups: map[string]GroupSize{"g": {Target: 10}, "h": {Target: 3, Min: 1}}, Now: now,
		Candidates: []Candidate{{Name: "a", Group: "g", Threshold: 0.5}, {Name: "b", Group: "g", Threshold: 0.5}, {Name: "c", Group: "h", Threshold: 0.5}},
		Deleting:   []string{"x1", "x2"},
		PDBs:       []*policyv1.PodDisruptionBudget{pdb("web", "web", 5), pdb("api", "api", 1)},
		Owners:     c.ownerData(),
		Rules:      RuleOptions{SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true, SkipNodesWithCustomControllerPods: true},
	}
	for i := range in.PDBs {
		in.PDBs[i].ResourceVersion = "100"
	}
	return c, in
}

// passedGrace is just after the pod being deleted on c passed its grace
// period (30 s) and the minute after it.
var passedGrace = now.Add(81 * time.Second)

func describe(p *Plan) string {
	var b strings.Builder
	for _, u := range p.Unneeded {
		fmt.Fprintf(&b, "unneeded %s %.2f; ", u.Node, u.Utilization)
	}
	for _, u := range p.Unremovable {
		fmt.Fprintf(&b, "%s %s; ", u.Node, u)
	}
	return b.String()
}

func TestPlannerReusesThePlanForTheSameClusterListedInAnotherOrder(t *testing.T) {
	c, in := plannerCluster(t)
	var p Planner
	first, reused, err := p.Plan(context.Background(), in)
	if err != nil || reused {
		t.Fatalf("first plan: reused %v, err %v", reused, err)
	}
	if !strings.Contains(describe(first), "c BlockedByPod") {
		t.Fatalf("plan %s: c must be held by its pod being deleted", describe(first))
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 5; i++ {
		again := in
		again.Candidates = append([]Candidate(nil), in.Candidates...)
		again.Deleting = append([]string(nil), in.Deleting...)
		again.PDBs = nil
		for _, b := range in.PDBs {
			// The disruption controller rewrites status (and so the
			// resourceVersion) as pods' readiness changes.
			b = b.DeepCopy()
			b.ResourceVersion = fmt.Sprint(200 + i)
			b.Status.CurrentHealthy = int32(i)
			again.PDBs = append(again.PDBs, b)
		}
		simtest.Shuffle(r, again.Candidates)
		simtest.Shuffle(r, again.Deleting)
		simtest.Shuffle(r, again.PDBs)
		again.Groups = map[string]GroupSize{"h": in.Groups["h"], "g": in.Groups["g"]}
		again.Now = now.Add(time.Duration(i) * time.Second)
		plan, reused, err := p.Plan(context.Background(), again)
		if err != nil || !reused || plan != first {
			t.Fatalf("same cluster listed in another order, %v later: reused %v, err %v", again.Now.Sub(now), reused, err)
		}
		if fresh := c.plan(nil, func(x *Input) { *x = again }); describe(fresh) != describe(first) {
			t.Fatalf("the order of the input changed the plan:\n%s\n%s", describe(fresh), describe(first))
		}
	}
}

func TestPlannerPlansAgainWhenAnythingItReadChanged(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, c *cluster, in *Input)
		// want, if set, is in the new plan: the old one was wrong.
		want string
	}{
		{"a pod placed", func(t *testing.T, c *cluster, in *Input) { c.pod("stay", "db", "1", nil) }, ""},
		{"a namespace created (pod affinity selects namespaces by label)", func(t *testing.T, c *cluster, in *Input) {
			before := c.checker.ListerVersion()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"env": "prod"}}}
			if _, err := c.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
				func(context.Context) (bool, error) { return c.checker.ListerVersion() != before, nil })
			if err != nil {
				t.Fatal("the checker never saw the new namespace")
			}
		}, ""},
		{"a controller deleted", func(t *testing.T, c *cluster, in *Input) {
			c.owners["web"] = false
			in.Owners = c.ownerData()
		}, "a BlockedByPod: pod default/web-"},
		{"a pod's grace period passed", func(t *testing.T, c *cluster, in *Input) { in.Now = passedGrace }, "unneeded c"},
		{"the clock went back", func(t *testing.T, c *cluster, in *Input) { in.Now = now.Add(-time.Second) }, ""},
		{"a threshold", func(t *testing.T, c *cluster, in *Input) { in.Candidates[0].Threshold = 0.1 }, "a NotUnderutilized"},
		{"a node became unready", func(t *testing.T, c *cluster, in *Input) { in.Candidates[2].Unready = true }, ""},
		{"a candidate less", func(t *testing.T, c *cluster, in *Input) { in.Candidates = in.Candidates[:2] }, ""},
		{"a group's minimum", func(t *testing.T, c *cluster, in *Input) { in.Groups["g"] = GroupSize{Target: 10, Min: 9} }, "NodeGroupMinSizeReached"},
		{"a node being deleted", func(t *testing.T, c *cluster, in *Input) { in.Deleting = append(in.Deleting, "stay") }, ""},
		{"a PDB's budget", func(t *testing.T, c *cluster, in *Input) { in.PDBs[0].Status.DisruptionsAllowed = 0 }, "NotEnoughPdb"},
		{"a PDB's selector", func(t *testing.T, c *cluster, in *Input) {
			in.PDBs[1].Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		}, ""},
		{"a PDB less", func(t *testing.T, c *cluster, in *Input) { in.PDBs = in.PDBs[1:] }, ""},
		{"a rule", func(t *testing.T, c *cluster, in *Input) { in.Rules.SkipNodesWithCustomControllerPods = false }, ""},
		{"DaemonSet utilization", func(t *testing.T, c *cluster, in *Input) { in.Candidates[1].IgnoreDaemonSetsUtilization = true }, ""},
		{"the salt", func(t *testing.T, c *cluster, in *Input) { in.Salt = "headroom 1/1" }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, in := plannerCluster(t)
			var p Planner
			if _, _, err := p.Plan(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			in.PDBs = []*policyv1.PodDisruptionBudget{in.PDBs[0].DeepCopy(), in.PDBs[1].DeepCopy()}
			in.Candidates = append([]Candidate(nil), in.Candidates...)
			tc.edit(t, c, &in)
			plan, reused, err := p.Plan(context.Background(), in)
			if err != nil || reused {
				t.Fatalf("the plan was reused (err %v)", err)
			}
			if !strings.Contains(describe(plan), tc.want) {
				t.Fatalf("new plan %s: want %q in it", describe(plan), tc.want)
			}
		})
	}
}

func TestEquivalentPodsToMoveShareOnePreFilter(t *testing.T) {
	c := newCluster(t)
	r := rand.New(rand.NewPCG(9, 9))
	c.node("stay", "16")
	for _, n := range []string{"a", "b"} {
		c.node(n, "4")
		for i := 0; i < 3; i++ {
			c.pod(n, "web", "500m", func(p *corev1.Pod) { simtest.Admit(p, r) })
		}
		c.pod(n, "api", "250m", func(p *corev1.Pod) { simtest.Admit(p, r) })
	}
	in := c.input([]string{"a", "b"})
	var memory Planner
	plan, _, err := memory.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if want := describe(c.plan([]string{"a", "b"}, nil)); describe(plan) != want {
		t.Fatalf("with shared checks:\n%s\nwithout:\n%s", describe(plan), want)
	}
	p := &planner{in: in, keys: simulator.NewEquivalenceKeys(), plan: &Plan{}, pdbs: NewPDBBudgets(nil)}
	evs := p.order()
	p.precheck(context.Background(), evs)
	checks := map[string]map[*simulator.GroupCheck]bool{"web": {}, "api": {}}
	for _, e := range evs {
		for i, info := range e.moving {
			checks[info.Pod.Labels["app"]][e.checks[i]] = true
		}
	}
	if len(checks["web"]) != 1 || len(checks["api"]) != 1 {
		t.Fatalf("%d checks for 6 web replicas, %d for 2 api replicas: want one each", len(checks["web"]), len(checks["api"]))
	}
}
