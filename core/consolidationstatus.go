package core

import (
	"fmt"
	"time"

	"github.com/tidal-autoscaler/tidal/core/consolidate"
)

// ConsolidationStatus is what the status ConfigMap says of replacements:
// the one under way, those the last decision proposed, why none starts,
// and the disruption budget windows open now.
type ConsolidationStatus struct {
	// Status: Proposed, Requested (new nodes awaited), Draining (old nodes
	// drained, moved pods placing), or NoActivity.
	Status   string             `json:"status"`
	Waiting  string             `json:"waiting,omitempty"`
	Ongoing  *ReplacementEntry  `json:"ongoing,omitempty"`
	Proposed []ReplacementEntry `json:"proposed,omitempty"`
	// ProposedSavingPerHour sums the proposed replacements' savings.
	ProposedSavingPerHour string   `json:"proposedSavingPerHour,omitempty"`
	BudgetWindows         []string `json:"disruptionBudgetWindows,omitempty"`
}

// ReplacementEntry is one replacement: its old nodes, the new nodes'
// group and count, and its saving per hour.
type ReplacementEntry struct {
	Kind          string   `json:"kind"`
	Old           []string `json:"old"`
	NodeGroup     string   `json:"nodeGroup"`
	Count         int      `json:"count"`
	New           []string `json:"new,omitempty"`
	SavingPerHour string   `json:"savingPerHour"`
	// Since is when its new nodes were requested, Draining when its old
	// nodes went to their drains; Step what it waits for.
	Since    string `json:"since,omitempty"`
	Draining string `json:"draining,omitempty"`
	Step     string `json:"step,omitempty"`
}

func replacementEntry(r consolidate.Replacement) ReplacementEntry {
	return ReplacementEntry{Kind: r.Kind, Old: r.Nodes(), NodeGroup: r.Group, Count: r.Count,
		SavingPerHour: fmt.Sprintf("%.4f", r.Saving)}
}

// consolidationStatus renders the iteration's consolidation step (nil:
// replacement is off).
func consolidationStatus(r *Iteration) *ConsolidationStatus {
	cr := r.consolidation
	if cr == nil {
		return nil
	}
	st := &ConsolidationStatus{Status: "NoActivity", Waiting: cr.waiting, BudgetWindows: cr.budgetWindows}
	if cr.plan != nil {
		saving := 0.0
		for _, p := range cr.plan.Replacements {
			st.Proposed = append(st.Proposed, replacementEntry(p))
			saving += p.Saving
		}
		if len(st.Proposed) > 0 {
			st.Status, st.ProposedSavingPerHour = "Proposed", fmt.Sprintf("%.4f", saving)
		}
	}
	if f := cr.inFlight; f != nil {
		e := replacementEntry(f.Replacement)
		e.Since, e.New = f.Requested.UTC().Format(time.RFC3339), f.New
		st.Status, e.Step = "Requested", "new nodes awaited"
		if cr.progress != nil && cr.progress.Step != consolidate.StepWait {
			e.Step = string(cr.progress.Step)
		}
		if !f.Draining.IsZero() {
			st.Status, e.Draining, e.Step = "Draining", f.Draining.UTC().Format(time.RFC3339), cr.settling
		}
		st.Ongoing = &e
	}
	return st
}
