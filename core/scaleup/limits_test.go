package scaleup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// The limits count registered nodes and every group's upcoming nodes as
// template copies; groups without a template add nothing.
func TestLimitsWithUsage(t *testing.T) {
	tmpl := func(cpu, mem string) *simulator.NodeTemplate {
		t.Helper()
		tm, err := simulator.NewNodeTemplate("g", nodeObj("template", cpu, mem, "a"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	nodes := []*corev1.Node{nodeObj("n1", "4", "16Gi", "a"), nodeObj("n2", "2", "8Gi", "a")}
	tests := []struct {
		name   string
		nodes  []*corev1.Node
		groups []Group
		want   Limits
	}{
		{"nothing", nil, nil, Limits{MaxNodesTotal: 10}},
		{"registered nodes", nodes, nil, Limits{MaxNodesTotal: 10, Nodes: 2, MilliCores: 6000, MemoryBytes: 24 << 30}},
		{"upcoming as template copies", nodes, []Group{{ID: "g", Template: tmpl("8", "32Gi"), Upcoming: 2}},
			Limits{MaxNodesTotal: 10, Nodes: 4, MilliCores: 22000, MemoryBytes: 88 << 30}},
		{"no template, no upcoming: nothing added", nil, []Group{{ID: "g", Upcoming: 3}, {ID: "h", Template: tmpl("8", "32Gi")}},
			Limits{MaxNodesTotal: 10}},
	}
	for _, tc := range tests {
		// Stale totals are replaced, not added to.
		got := Limits{MaxNodesTotal: 10, Nodes: 99, MilliCores: 1}.WithUsage(tc.nodes, tc.groups)
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
