package scaledown

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
)

// DisruptionBudget is how many nodes may be disrupted (drained or
// removed) at once: a count, or a percentage of the nodes ("10%", rounded
// up, as Karpenter's budgets). The zero value sets no budget.
type DisruptionBudget struct {
	Nodes   int
	Percent bool
	Set     bool
}

// ParseDisruptionBudget reads "3" or "10%".
func ParseDisruptionBudget(s string) (DisruptionBudget, error) {
	v, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || percent && n > 100 {
		return DisruptionBudget{}, fmt.Errorf("disruption budget %q: want a count of nodes (\"3\") or a percentage (\"10%%\")", s)
	}
	return DisruptionBudget{Nodes: n, Percent: percent, Set: true}, nil
}

// Allowed is how many of total nodes the budget lets be disrupted at once
// (-1: no budget set).
func (b DisruptionBudget) Allowed(total int) int {
	if !b.Set {
		return -1
	}
	if !b.Percent {
		return b.Nodes
	}
	return int(math.Ceil(float64(total) * float64(b.Nodes) / 100))
}

// Tightest is the fewest nodes of total any of the budgets set lets be
// disrupted at once (-1: none is set): where budgets overlap, the most
// restrictive holds, as in Karpenter.
func Tightest(total int, budgets ...DisruptionBudget) int {
	out := -1
	for _, b := range budgets {
		if a := b.Allowed(total); a >= 0 && (out < 0 || a < out) {
			out = a
		}
	}
	return out
}

func (b DisruptionBudget) String() string {
	if b.Percent {
		return strconv.Itoa(b.Nodes) + "%"
	}
	return strconv.Itoa(b.Nodes)
}

// Disruptions is how many more nodes may be disrupted now: per node group
// (a group missing has no budget of its own) and, when Capped, in the
// whole cluster. The zero value holds nothing back.
type Disruptions struct {
	PerGroup map[string]int
	Cluster  int
	Capped   bool
}

// DisruptionsLeft is what the budgets allow less what is disrupted:
// allowed per group (a negative count: no budget) and, when capped, in the
// cluster (cluster < 0: not capped), less the nodes being disrupted by
// group.
func DisruptionsLeft(allowed map[string]int, cluster int, disrupting map[string]int) Disruptions {
	b := Disruptions{PerGroup: map[string]int{}, Cluster: cluster, Capped: cluster >= 0}
	total := 0
	for _, n := range disrupting {
		total += n
	}
	for g, a := range allowed {
		if a >= 0 {
			b.PerGroup[g] = max(0, a-disrupting[g])
		}
	}
	if b.Capped {
		b.Cluster = max(0, cluster-total)
	}
	return b
}

// Clone is a copy to spend.
func (b Disruptions) Clone() *Disruptions {
	c := Disruptions{PerGroup: maps.Clone(b.PerGroup), Cluster: b.Cluster, Capped: b.Capped}
	return &c
}

// Allows tells whether the nodes, counted by group, fit in the budget.
func (b *Disruptions) Allows(byGroup map[string]int) bool {
	total := 0
	for g, n := range byGroup {
		total += n
		if left, ok := b.PerGroup[g]; ok && n > left {
			return false
		}
	}
	return !b.Capped || total <= b.Cluster
}

// Spend spends the budget on the nodes, counted by group.
func (b *Disruptions) Spend(byGroup map[string]int) {
	for g, n := range byGroup {
		if _, ok := b.PerGroup[g]; ok {
			b.PerGroup[g] -= n
		}
		if b.Capped {
			b.Cluster -= n
		}
	}
}

// Take spends one node of group when the budget allows it.
func (b *Disruptions) Take(group string) bool {
	one := map[string]int{group: 1}
	if !b.Allows(one) {
		return false
	}
	b.Spend(one)
	return true
}
