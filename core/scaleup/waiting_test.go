package scaleup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pods waiting for a group's requested nodes (Input.Waiting) take that
// group's upcoming copies before the copies are filled largest first: 2
// pods of 3 CPU (any zone) were planned on group b's 2 upcoming 4-CPU nodes
// and 2 pods of 2 CPU (zone a only) on group a's. Filled largest first over
// a's copies then b's, the pods of 3 CPU would take a's copies and the zone-a
// pods would ask for a node of a again, every decision while the nodes come.
func TestWaitingPodsKeepTheirGroupsUpcomingCopies(t *testing.T) {
	for _, tc := range []struct {
		name             string
		zonedFor, bigFor string // the group each kind of pod waits for
		wantAdded        int    // nodes of a asked for
	}{
		{"each kind waits for its group", "a", "b", 0},
		{"only the zoned pods wait", "a", "", 0},
		{"only the large pods wait", "", "b", 0},
		{"none waits: largest first", "", "", 1},
		{"waiting for a group with no copies", "c", "c", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.group("a", "4", "16Gi", "a", 2, 10).Upcoming = 2
			c.group("b", "4", "16Gi", "b", 2, 10).Upcoming = 2
			c.group("c", "4", "16Gi", "c", 2, 10)
			c.pend(2, "zoned", "2", "1Gi", func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "a"}
			})
			c.pend(2, "big", "3", "1Gi", nil)
			waiting := map[types.UID]string{}
			for i, p := range c.pending {
				if g := [4]string{tc.zonedFor, tc.zonedFor, tc.bigFor, tc.bigFor}[i]; g != "" {
					waiting[p.UID] = g
				}
			}
			plan := c.decide("least-waste", func(in *Input) { in.Waiting = waiting })
			if got := nodesAdded(plan)["a"]; got != tc.wantAdded || len(plan.ScaleUps) != min(tc.wantAdded, 1) {
				t.Fatalf("scale-ups %+v (%d nodes of a), want %d nodes of a only", plan.ScaleUps, got, tc.wantAdded)
			}
			if tc.wantAdded > 0 {
				return
			}
			// A waiting pod awaits its group's nodes.
			for _, p := range c.pending {
				if want, ok := waiting[p.UID]; ok && plan.Awaiting[p.UID] != want {
					t.Errorf("pod %s awaits %q, want %q", p.Name, plan.Awaiting[p.UID], want)
				}
			}
		})
	}
}
