package scaleup

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// A registered node still starting (Group.Starting) is its group's first
// upcoming copy: pods placed there await it by name (AwaitingOn), pods
// already nominated to it hold their room on the copy, and pods placed on
// copies of nodes not yet registered await only the group.
func TestStartingNodesAreNamedAndKeepTheirNominatedPods(t *testing.T) {
	for _, tc := range []struct {
		name      string
		nominated int // pods of 1 CPU nominated to g-1
		pending   int // pods of 1 CPU pending
		starting  []string
		wantOn    int // pending pods awaiting g-1 by name
		wantAdded int
	}{
		{"pods fill the starting node first", 0, 6, []string{"g-1"}, 4, 0},
		{"nominated pods keep their room", 3, 6, []string{"g-1"}, 1, 1},
		{"no starting node: nothing named", 0, 6, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.group("g", "4", "16Gi", "a", 2, 10).Upcoming = 2
			c.groups[0].Starting = tc.starting
			c.node("g-1", "4", "16Gi", "a")
			for range tc.nominated {
				p := c.pod("held", "1", "1Gi")
				p.Status.NominatedNodeName = "g-1"
				pi, _ := framework.NewPodInfo(p)
				if err := c.snap.AddPod(pi, "g-1"); err != nil {
					t.Fatal(err)
				}
			}
			c.pend(tc.pending, "web", "1", "1Gi", nil)
			plan := c.decide("least-waste", func(in *Input) { in.NotReady = map[string]bool{"g-1": true} })
			on := 0
			for uid, node := range plan.AwaitingOn {
				if node != "g-1" || plan.Awaiting[uid] != "g" {
					t.Fatalf("pod %s awaits node %q of group %q, want g-1 of g", uid, node, plan.Awaiting[uid])
				}
				on++
			}
			if on != tc.wantOn || nodesAdded(plan)["g"] != tc.wantAdded {
				t.Fatalf("%d pods await g-1, %d nodes added: want %d and %d (awaiting %v)", on, nodesAdded(plan)["g"],
					tc.wantOn, tc.wantAdded, plan.Awaiting)
			}
			if got := len(c.snap.NodeInfo("g-1").Pods); got != tc.nominated {
				t.Fatalf("g-1 has %d pods after the decision, want its %d nominated back", got, tc.nominated)
			}
		})
	}
}

// Pods awaiting upcoming nodes are placed on their copies largest first,
// as the plan that asked for the nodes packed them: 2 pods of 1.5 CPU
// tried before 2 of 2.5 CPU still fit the 2 upcoming 4-CPU nodes, one of
// each size on each, and nothing more is asked for.
func TestUpcomingCopiesTakeTheLargestPodsFirst(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 2, 10).Upcoming = 2
	c.pend(2, "small", "1500m", "1Gi", nil)
	c.pend(2, "big", "2500m", "1Gi", nil)
	plan := c.decide("least-waste", nil)
	if len(plan.ScaleUps) != 0 || len(plan.Awaiting) != 4 {
		t.Fatalf("scale-ups %+v, %d pods awaiting the upcoming nodes: want none and 4", plan.ScaleUps, len(plan.Awaiting))
	}
}

// A pod whose nomination was cleared (Input.Cleared) goes back to the node
// it named while it fits there, whatever node first-fit reaches first: 2
// nodes of 4 CPU hold a pod of 2.5 CPU nominated each (still starting) or
// running (ready), and 2 pending pods of 1.5 CPU were nominated the first
// to the second node and the second to the first.
func TestClearedNominationsGoBackToTheirNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		starting bool
		cleared  []string // node each pending pod's cleared nomination named
		full     string   // a node given 1 CPU more, leaving no room
		want     []string // node each pending pod is placed on
	}{
		{"starting nodes", true, []string{"g-2", "g-1"}, "", []string{"g-2", "g-1"}},
		{"ready nodes", false, []string{"g-2", "g-1"}, "", []string{"g-2", "g-1"}},
		{"none cleared: first fit", true, []string{"", ""}, "", []string{"g-1", "g-2"}},
		{"no room left there", true, []string{"g-2", "g-2"}, "g-2", []string{"g-1", ""}},
		{"a node not known", false, []string{"g-9", "g-1"}, "", []string{"g-2", "g-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			g := c.group("g", "4", "16Gi", "a", 2, 2)
			notReady := map[string]bool{}
			for _, name := range []string{"g-1", "g-2"} {
				c.node(name, "4", "16Gi", "a")
				cpu := "2500m"
				if name == tc.full {
					cpu = "3500m"
				}
				held := c.pod("held", cpu, "1Gi")
				if tc.starting {
					held.Status.NominatedNodeName = name
					g.Starting = append(g.Starting, name)
					g.Upcoming++
					notReady[name] = true
				} else {
					held.Spec.NodeName = name
				}
				pi, _ := framework.NewPodInfo(held)
				if err := c.snap.AddPod(pi, name); err != nil {
					t.Fatal(err)
				}
			}
			c.pend(2, "small", "1500m", "1Gi", nil)
			cleared := map[types.UID]string{}
			for i, node := range tc.cleared {
				if node != "" {
					cleared[c.pending[i].UID] = node
				}
			}
			plan := c.decide("least-waste", func(in *Input) { in.NotReady, in.Cleared = notReady, cleared })
			on := map[types.UID]string{}
			for uid, node := range plan.AwaitingOn {
				on[uid] = node
			}
			for _, pl := range plan.OnExisting {
				on[pl.Info.GetPod().UID] = pl.Node
			}
			for i, want := range tc.want {
				if got := on[c.pending[i].UID]; got != want {
					t.Errorf("pending pod %d (cleared from %q) placed on %q, want %q", i, tc.cleared[i], got, want)
				}
			}
		})
	}
}

// A registered node still starting that holds no pod (those nominated to
// it went to other nodes) takes the pods waiting before the room left on
// the other starting nodes, so that it does not end empty: 2 starting nodes
// of 4 CPU, each holding the pods nominated to it, a third node requested
// and not yet registered, and a pod of 1.5 CPU pending.
func TestVacantStartingNodesAreFilledFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		held   []string // CPU nominated to g-1 and to g-2 ("": none)
		wantOn string   // node the pending pod awaits ("": an unregistered one)
	}{
		{"the vacant node first", []string{"2500m", ""}, "g-2"},
		{"both hold pods: first fit", []string{"2500m", "1"}, "g-1"},
		{"both vacant: first fit", []string{"", ""}, "g-1"},
		{"the first vacant", []string{"", "2500m"}, "g-1"},
		{"both full: the requested node", []string{"3500m", "3500m"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			g := c.group("g", "4", "16Gi", "a", 3, 3)
			g.Upcoming, g.Starting = 3, []string{"g-1", "g-2"}
			for i, name := range g.Starting {
				c.node(name, "4", "16Gi", "a")
				if tc.held[i] == "" {
					continue
				}
				held := c.pod("held", tc.held[i], "1Gi")
				held.Status.NominatedNodeName = name
				pi, _ := framework.NewPodInfo(held)
				if err := c.snap.AddPod(pi, name); err != nil {
					t.Fatal(err)
				}
			}
			c.pend(1, "web", "1500m", "1Gi", nil)
			plan := c.decide("least-waste", func(in *Input) { in.NotReady = map[string]bool{"g-1": true, "g-2": true} })
			uid := c.pending[0].UID
			if plan.Awaiting[uid] != "g" || plan.AwaitingOn[uid] != tc.wantOn || len(plan.ScaleUps) != 0 {
				t.Fatalf("the pod awaits group %q, node %q, scale-ups %+v: want group g, node %q, none",
					plan.Awaiting[uid], plan.AwaitingOn[uid], plan.ScaleUps, tc.wantOn)
			}
		})
	}
}
