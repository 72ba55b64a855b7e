package scaledown

import (
	"slices"
	"time"
)

// SoftTaintNode is a node as the soft-taint step sees it.
type SoftTaintNode struct {
	Name string
	// Tainted: the node has the DeletionCandidate taint.
	Tainted bool
	// Unneeded: the plan found the node unneeded.
	Unneeded bool
	// Removing: the node is being removed (or has the ToBeDeleted taint);
	// its taints are the removal's business.
	Removing bool
}

// SoftTaintChanges lists the DeletionCandidate taints to write, in Cluster
// Autoscaler's order: first taken off nodes needed again (they repel pods
// the cluster needs room for), sorted by name, then put on unneeded nodes,
// in the order given.
func SoftTaintChanges(nodes []SoftTaintNode) (remove, add []string) {
	for _, n := range nodes {
		switch {
		case n.Removing:
		case n.Tainted && !n.Unneeded:
			remove = append(remove, n.Name)
		case !n.Tainted && n.Unneeded:
			add = append(add, n.Name)
		}
	}
	slices.Sort(remove)
	return remove, add
}

// Budget bounds a burst of writes by count and by time, as
// --max-bulk-soft-taint-count and --max-bulk-soft-taint-time do: a write
// starts only while both last.
type Budget struct {
	left     int
	deadline time.Time
}

// NewBudget allows count writes started before start+d.
func NewBudget(count int, start time.Time, d time.Duration) *Budget {
	return &Budget{left: count, deadline: start.Add(d)}
}

// Take spends one write at now, or reports false when the budget is spent.
func (b *Budget) Take(now time.Time) bool {
	if b.left <= 0 || !now.Before(b.deadline) {
		return false
	}
	b.left--
	return true
}
