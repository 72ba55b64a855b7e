package scaledown

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestDrainsUnderWayKeepTheirRoom: the pods a drain under way has yet to
// evict take their room on the nodes that stay before a candidate counts on
// it, so two drains never count on the same free room.
func TestDrainsUnderWayKeepTheirRoom(t *testing.T) {
	deleted := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }
	daemon := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
	}
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	cases := []struct {
		name string
		// leaving are the pods (CPU, edit) on the node being drained.
		leaving    []string
		edit       func(*corev1.Pod)
		want       string // cand's fate: "unneeded" or its reason's prefix
		reserved   int
		unreserved int
	}{
		{"nothing left to evict", nil, nil, "unneeded", 0, 0},
		{"a pod still to evict takes the free room", []string{"3"}, nil, "NoPlaceToMovePods", 1, 0},
		{"a small pod leaves room for the candidate's", []string{"1"}, nil, "unneeded", 1, 0},
		{"pods still to evict add up", []string{"1", "1"}, nil, "NoPlaceToMovePods", 2, 0},
		{"a pod being deleted: its new pod is pending, pictured where it lands", []string{"3"}, deleted, "unneeded", 0, 0},
		{"a DaemonSet pod needs no room", []string{"3"}, daemon, "unneeded", 0, 0},
		{"a finished pod needs no room", []string{"3"}, finished, "unneeded", 0, 0},
		{"a pod that fits nowhere reserves nothing", []string{"6"}, nil, "unneeded", 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.node("leaving", "8")
			c.node("stay", "4")
			c.node("cand", "4")
			c.pod("stay", "db", "1", nil) // 3 CPU free
			c.pod("cand", "web", "1500m", nil)
			for _, cpu := range tc.leaving {
				c.pod("leaving", "old", cpu, tc.edit)
			}
			plan := c.plan([]string{"cand"}, func(in *Input) { in.Deleting = []string{"leaving", "gone-already"} })
			got := reasonOf(plan, "cand")
			if len(plan.Unneeded) == 1 {
				got = "unneeded"
			}
			if !strings.HasPrefix(got, tc.want) || plan.Reserved != tc.reserved || len(plan.Unreserved) != tc.unreserved {
				t.Fatalf("cand %q, reserved %d, unreserved %d; want %q, %d, %d", got, plan.Reserved, len(plan.Unreserved),
					tc.want, tc.reserved, tc.unreserved)
			}
		})
	}
}

// TestTightestBudget: where budgets overlap (the flag's and the open
// windows'), the one allowing fewest nodes holds; an unset one holds
// nothing back.
func TestTightestBudget(t *testing.T) {
	parse := func(s string) DisruptionBudget {
		if s == "" {
			return DisruptionBudget{}
		}
		b, err := ParseDisruptionBudget(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		budgets []string
		total   int
		want    int
	}{
		{nil, 10, -1},
		{[]string{""}, 10, -1},
		{[]string{"", "3"}, 10, 3},
		{[]string{"50%", "3"}, 10, 3},
		{[]string{"50%", "3"}, 4, 2},
		{[]string{"10%"}, 11, 2}, // rounded up
		{[]string{"5", "0", "20%"}, 10, 0},
	} {
		var bs []DisruptionBudget
		for _, s := range tc.budgets {
			bs = append(bs, parse(s))
		}
		if got := Tightest(tc.total, bs...); got != tc.want {
			t.Errorf("Tightest(%d, %q) = %d, want %d", tc.total, tc.budgets, got, tc.want)
		}
	}
}
