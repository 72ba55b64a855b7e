package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// TestDisruptionsLeftWithWindows: the budgets removals and replacements
// spend are the tightest of the flags' and the open windows', less the
// removals under way.
func TestDisruptionsLeftWithWindows(t *testing.T) {
	windows := `
- {name: freeze-a, nodeGroup: a, start: "0 9 * * *", duration: 2h, nodes: 0}
- {name: slow, start: "0 9 * * *", duration: 2h, nodes: "10%"}
- {name: later, nodeGroup: b, start: "0 20 * * *", duration: 1h, nodes: 0}
`
	cfg := nodeschedule.Parse(map[string]string{nodeschedule.BudgetsKey: windows}, nil)
	if len(cfg.Problems) > 0 {
		t.Fatal(cfg.Problems)
	}
	o := &observation{groups: []*groupObservation{{group: &fakeGroup{id: "a"}, target: 10}, {group: &fakeGroup{id: "b"}, target: 10}}}
	for i := range 20 {
		o.nodes = append(o.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i))}})
	}
	three := scaledown.DisruptionBudget{Nodes: 3, Set: true}
	for _, tc := range []struct {
		name     string
		at       string
		opts     ConsolidationOptions
		removing map[string]int
		wantA    int // -1: no budget of its own
		wantB    int
		cluster  int // -1: not capped
	}{
		{"no flag, no window open", "08:00", ConsolidationOptions{}, nil, -1, -1, -1},
		{"windows open: a frozen, the cluster at 10% of 20", "09:30", ConsolidationOptions{}, nil, 0, -1, 2},
		{"the flag's 3 per group against a's window", "09:30", ConsolidationOptions{GroupBudget: three}, nil, 0, 3, 2},
		{"the flag's, less removals under way", "12:00", ConsolidationOptions{GroupBudget: three, Budget: three},
			map[string]int{"b": 2}, 3, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, _ := time.Parse(time.DateTime, "2026-03-02 "+tc.at+":00")
			active, _ := cfg.BudgetsAt(at)
			got := disruptionsLeft(o, tc.opts, active, act.Removing{PerGroup: tc.removing})
			left := func(g string) int {
				if v, ok := got.PerGroup[g]; ok {
					return v
				}
				return -1
			}
			cluster := got.Cluster
			if !got.Capped {
				cluster = -1
			}
			if left("a") != tc.wantA || left("b") != tc.wantB || cluster != tc.cluster {
				t.Fatalf("left a %d, b %d, cluster %d; want %d, %d, %d", left("a"), left("b"), cluster, tc.wantA, tc.wantB, tc.cluster)
			}
		})
	}
}
