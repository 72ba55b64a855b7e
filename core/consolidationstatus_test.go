package core

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/core/consolidate"
)

// TestConsolidationStatus: the status shows the replacements proposed,
// the one under way at each step, and the budget windows open.
func TestConsolidationStatus(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	single := consolidate.Replacement{Kind: consolidate.KindSingle, Old: []consolidate.Old{{Node: "big-0", Group: "big"}}, Group: "small",
		Count: 1, OldCost: 0.5, NewCost: 0.19, Saving: 0.31}
	multi := consolidate.Replacement{Kind: consolidate.KindMulti, Old: []consolidate.Old{{Node: "big-1"}, {Node: "big-2"}}, Group: "small",
		Count: 1, Saving: 0.81}
	requested := &consolidate.InFlight{Replacement: single, Requested: at}
	draining := &consolidate.InFlight{Replacement: single, Requested: at, Draining: at.Add(time.Minute), New: []string{"small-7"}}
	cases := []struct {
		name string
		cr   *consolidationReport
		want []string // lines the YAML holds
	}{
		{"off", nil, nil},
		{"nothing to do", &consolidationReport{waiting: "pods are pending", budgetWindows: []string{"office-freeze"}},
			[]string{"status: NoActivity", "waiting: pods are pending", "- office-freeze"}},
		{"proposed", &consolidationReport{plan: &consolidate.Plan{Replacements: []consolidate.Replacement{multi, single}}},
			[]string{"status: Proposed", "proposedSavingPerHour: \"1.1200\"", "kind: multi", "- big-1", "savingPerHour: \"0.3100\""}},
		{"new nodes awaited", &consolidationReport{inFlight: requested, progress: &consolidate.Progress{Step: consolidate.StepWait}},
			[]string{"status: Requested", "step: new nodes awaited", "since: \"2026-03-02T09:00:00Z\"", "nodeGroup: small"}},
		{"draining", &consolidationReport{inFlight: draining, settling: "1 moved pod(s) wait for a node"},
			[]string{"status: Draining", "draining: \"2026-03-02T09:01:00Z\"", "step: 1 moved pod(s) wait for a node", "- small-7"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := consolidationStatus(&Iteration{consolidation: tc.cr})
			if tc.cr == nil {
				if st != nil {
					t.Fatalf("status %+v with replacement off, want none", st)
				}
				return
			}
			raw, err := yaml.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(raw), w) {
					t.Errorf("status lacks %q:\n%s", w, raw)
				}
			}
		})
	}
}
