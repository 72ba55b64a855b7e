// Package consolidate decides replacements: nodes whose pods would run on
// fewer or cheaper new nodes, as Karpenter's consolidation does, within
// the rules scale-down keeps (core/scaledown). Deletions, a node whose pods
// fit on the nodes that stay, are scale-down's; this package adds
// single-node replacement (a node whose pods fit on one cheaper new node
// plus room on the nodes that stay) and multi-node replacement (a set of
// nodes whose pods fit on fewer new nodes of any group), each with its
// saving per hour. Decide is a pure function of its input: fits are judged
// by the scheduler framework's plugins on a fork of the snapshot, restored
// before it returns.
package consolidate

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// Group is what consolidation knows of a node group.
type Group struct {
	// Price is one node's price per hour; Priced is false when the
	// provider gave none: such a group is never chosen for new nodes, and
	// its nodes are not replaced (their cost is unknown).
	Price  float64
	Priced bool
	// Template is what a new node of the group looks like (nil: the group
	// cannot be grown for a replacement).
	Template *simulator.NodeTemplate
	// Target is the group's size less the nodes being removed; Min and
	// Max its bounds.
	Target, Min, Max int
}

// Candidate is a node that may be replaced: of a group, not being
// removed, not annotated out (scaledown.Disabled), ready.
type Candidate struct {
	Name, Group string
}

// Leaving is a node scale-down removes (unneeded in its plan) and the pods
// it moves: their room is taken before any replacement counts on it.
type Leaving struct {
	Node string
	Pods []*corev1.Pod
}

// MinSaving is the least saving a replacement must bring: strictly more
// than zero, at least PerHour, and at least Fraction of the old nodes'
// cost.
type MinSaving struct {
	Fraction, PerHour float64
}

// Input is what Decide reads.
type Input struct {
	// Checker holds the snapshot: every node and the pods bound to it.
	Checker    *simulator.Checker
	Candidates []Candidate
	Groups     map[string]Group
	// Deleting are nodes being removed already; Leaving those scale-down
	// plans to remove.
	Deleting []string
	Leaving  []Leaving
	PDBs     []*policyv1.PodDisruptionBudget
	Owners   scaledown.Owners
	Rules    scaledown.RuleOptions
	Min      MinSaving
	// MaxNodes bounds how many nodes one multi-node replacement takes
	// (below 2: no multi-node replacement).
	MaxNodes int
	// Budget is how many more nodes may be disrupted now.
	Budget scaledown.Disruptions
	Now    time.Time
}

// Replacement kinds, the label of the consolidation metrics.
const (
	KindSingle = "single"
	KindMulti  = "multi"
)

// Old is a node a replacement removes, with the pods its drain evicts.
type Old struct {
	Node, Group string
	Pods        scaledown.NodePods
}

// Replacement is a move: Old go once Count new nodes of Group are Ready.
type Replacement struct {
	Kind  string
	Old   []Old
	Group string
	Count int
	// OldCost and NewCost are per hour; Saving is their difference.
	OldCost, NewCost, Saving float64
}

// Nodes are the names of the old nodes.
func (r Replacement) Nodes() []string {
	out := make([]string, len(r.Old))
	for i, o := range r.Old {
		out[i] = o.Node
	}
	return out
}

// Pods are the pods the old nodes' drains evict.
func (r Replacement) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range r.Old {
		out = append(out, o.Pods.ToMove...)
	}
	return out
}

// Kept is a candidate no replacement takes, and why.
type Kept struct {
	Node, Reason string
}

// Plan is what Decide proposes, the best first.
type Plan struct {
	Replacements []Replacement
	Kept         []Kept
	// Waiting, when set, is why nothing is proposed at all.
	Waiting string
}

// Decide proposes replacements: the multi-node one with the largest set
// of candidates (taken in order, fewest pods to move first) that fits on
// fewer cheaper new nodes, then single-node ones for the candidates left;
// or single-node ones alone when they save more in all. A move's old
// nodes, its destinations and new nodes are not used by another move of
// the same plan, so the plan's moves never count on the same room. The
// plan does not depend on the order of its inputs.
func Decide(ctx context.Context, in Input) (*Plan, error) {
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	s := &sim{in: in, used: map[string]bool{}, added: map[string]int{}}
	if why, err := s.clear(ctx); err != nil || why != "" {
		return &Plan{Waiting: why}, err
	}
	cleared := s.used
	var best *Plan
	for _, multi := range []bool{true, false} {
		s.used, s.added = maps.Clone(cleared), map[string]int{}
		snap.Fork()
		p, err := s.plan(ctx, multi)
		snap.Revert()
		if err != nil {
			return nil, err
		}
		if best == nil || p.saving() > best.saving()+1e-9 {
			best = p
		}
	}
	return best, nil
}

// plan is Decide's plan with or without a multi-node replacement.
func (s *sim) plan(ctx context.Context, multi bool) (*Plan, error) {
	pdbs := scaledown.NewPDBBudgets(s.in.PDBs)
	cands, kept := eligible(s.in, pdbs, s.used)
	plan := &Plan{Kept: kept}
	budget := s.in.Budget.Clone()
	if multi {
		r, err := s.multi(ctx, cands, pdbs, budget)
		if err != nil {
			return nil, err
		}
		if r != nil {
			plan.Replacements = append(plan.Replacements, *r)
		}
	}
	singles, err := s.notRemovals(ctx, cands, plan)
	if err != nil {
		return nil, err
	}
	for _, c := range singles {
		if s.used[c.Name] {
			continue
		}
		r, why, err := s.single(ctx, c, pdbs, budget)
		if err != nil {
			return nil, err
		}
		if r == nil {
			plan.Kept = append(plan.Kept, Kept{Node: c.Name, Reason: why})
			continue
		}
		plan.Replacements = append(plan.Replacements, *r)
	}
	return plan, nil
}

// notRemovals keeps the candidates whose pods do not all fit on the
// nodes that stay: a node whose pods do is scale-down's to remove (with
// its utilization threshold), never replaced alone. A candidate an
// earlier move took is left as it is.
func (s *sim) notRemovals(ctx context.Context, cands []candidate, plan *Plan) ([]candidate, error) {
	out := cands[:0:0]
	for _, c := range cands {
		if s.used[c.Name] {
			out = append(out, c)
			continue
		}
		_, fits, err := s.replace(ctx, []candidate{c}, c.Group, 0, false)
		if err != nil {
			return nil, err
		}
		if fits {
			plan.Kept = append(plan.Kept, Kept{Node: c.Name, Reason: removal})
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// removal is why a node whose pods fit on the others is not replaced.
const removal = "its pods fit on the nodes that stay: a removal, scale-down's"

// saving is the plan's saving per hour in all.
func (p *Plan) saving() float64 {
	sum := 0.0
	for _, r := range p.Replacements {
		sum += r.Saving
	}
	return sum
}

// candidate is an eligible candidate with its pods.
type candidate struct {
	Candidate
	pods  scaledown.NodePods
	util  float64
	price float64
}

// eligible are the candidates a replacement may take, fewest pods to move
// first, then least utilized, then by name; kept says why the others are
// not.
func eligible(in Input, pdbs *scaledown.PDBBudgets, taken map[string]bool) ([]candidate, []Kept) {
	snap := in.Checker.Snapshot()
	var out []candidate
	var kept []Kept
	for _, c := range slices.SortedFunc(slices.Values(in.Candidates), func(a, b Candidate) int { return cmp.Compare(a.Name, b.Name) }) {
		ni := snap.NodeInfo(c.Name)
		g, known := in.Groups[c.Group]
		switch {
		case ni == nil:
			continue
		case taken[c.Name]:
			kept = append(kept, Kept{Node: c.Name, Reason: "takes pods of a node scale-down removes"})
			continue
		case !known || !g.Priced:
			kept = append(kept, Kept{Node: c.Name, Reason: fmt.Sprintf("node group %s has no price", c.Group)})
			continue
		}
		pods := make([]*corev1.Pod, len(ni.Pods))
		for i, pi := range ni.Pods {
			pods[i] = pi.GetPod()
		}
		np := scaledown.ClassifyPods(pods, in.Rules, in.Owners, pdbs.Covered, in.Now)
		switch {
		case np.Blocker != nil:
			kept = append(kept, Kept{Node: c.Name, Reason: np.Blocker.String()})
			continue
		case len(np.ToMove) == 0:
			// Empty: a deletion, scale-down's.
			continue
		}
		out = append(out, candidate{Candidate: c, pods: np, price: g.Price,
			util: scaledown.Utilization(ni, scaledown.Ignored{DaemonSets: true, MirrorPods: true})})
	}
	slices.SortStableFunc(out, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(len(a.pods.ToMove), len(b.pods.ToMove)), cmp.Compare(a.util, b.util))
	})
	return out, kept
}

// enough tells whether saving passes the minimum for old nodes costing
// oldCost.
func (m MinSaving) enough(saving, oldCost float64) bool {
	return saving > 1e-9 && saving >= m.PerHour && saving >= m.Fraction*oldCost
}
