// Package nominate decides which pending pods tidal nominates to the nodes
// a scale-up planned for them (status.nominatedNodeName), and which of its
// nominations it withdraws. Since Kubernetes 1.35 (KEP-5278,
// NominatedNodeNameForExpectation) the scheduler tries a pod's nominated
// node first and binds it there when it fits, so the pods land where the
// plan packed them rather than where the default scoring spreads them.
//
// Decide is a pure function: what tidal nominated comes in as State and
// the next State goes out; the node loop writes the changes through its
// actuator.
package nominate

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Pod is what the decision reads of a pod.
type Pod struct {
	Namespace, Name string
	// Node is the node the pod is bound to ("" while pending).
	Node string
	// Nominated is its status.nominatedNodeName.
	Nominated string
}

// Nomination is a pod tidal nominated to a node.
type Nomination struct {
	Namespace, Name string
	Node            string
}

// State is what tidal nominated and has not withdrawn, by pod UID.
type State map[types.UID]Nomination

// Input is one iteration's view.
type Input struct {
	// Pods are the pods the decision may concern, by UID: the pending
	// pods of Planned and those of Standing that still exist. A pod
	// missing here is gone.
	Pods map[types.UID]Pod
	// Planned maps pending pods that waited for a scale-up to the node
	// this iteration's decision placed them on, in the current snapshot: a
	// node of the group they waited for that can take pods now (Ready, no
	// startup taint), or a registered node of it still starting, counted
	// as coming.
	Planned map[types.UID]string
	// Usable are the nodes a nomination may stand on: those that can take
	// pods now and those still starting, counted as coming.
	Usable map[string]bool
	// Standing is what tidal nominated before this iteration.
	Standing State
	// Budget bounds the writes of one iteration (<= 0: none).
	Budget int
}

// Change is one write: Node is the nomination to set, "" to clear it.
type Change struct {
	UID             types.UID
	Namespace, Name string
	Node            string
}

// Result is the decision: the writes, clears first, and the state that
// holds once they are made. Deferred counts the changes left for the next
// iterations by the budget.
type Result struct {
	Clear, Set []Change
	Next       State
	Deferred   int
}

// Decide says which nominations to set and which to withdraw.
//
//   - A planned pod is nominated to its planned node, unless it already
//     is, or someone else (preemption) nominated it elsewhere. A nomination
//     the scheduler cleared is so set again while the plan stands.
//   - A standing nomination the plan no longer names stands while the pod
//     is pending, still nominated there and the node usable: a nominated
//     pod counts on its node and is pending no more, so no new plan names
//     it. It is withdrawn when its node goes or cannot take pods.
//   - A pod that is gone, bound, or nominated elsewhere by another is
//     forgotten without a write.
//
// Writes are taken within the budget, clears first; a change that does not
// fit waits for the next iteration (the state keeps what is true).
func Decide(in Input) Result {
	res := Result{Next: State{}}
	var clears, sets []Change
	for _, uid := range sortedUIDs(in.Standing) {
		n := in.Standing[uid]
		p, ok := in.Pods[uid]
		if !ok || p.Node != "" {
			continue
		}
		if _, planned := in.Planned[uid]; planned {
			continue
		}
		if p.Nominated != n.Node {
			// Cleared by the scheduler and no longer planned, or taken
			// by another: nothing of tidal's stands.
			continue
		}
		if in.Usable[n.Node] {
			res.Next[uid] = n
			continue
		}
		clears = append(clears, Change{UID: uid, Namespace: p.Namespace, Name: p.Name})
		res.Next[uid] = n
	}
	for _, uid := range sortedUIDs(in.Planned) {
		node := in.Planned[uid]
		p, ok := in.Pods[uid]
		if !ok || p.Node != "" || !in.Usable[node] {
			continue
		}
		ours, had := in.Standing[uid]
		switch {
		case p.Nominated == node:
			res.Next[uid] = Nomination{Namespace: p.Namespace, Name: p.Name, Node: node}
			continue
		case p.Nominated != "" && (!had || ours.Node != p.Nominated):
			continue
		}
		if had && ours.Node == p.Nominated {
			res.Next[uid] = ours
		}
		sets = append(sets, Change{UID: uid, Namespace: p.Namespace, Name: p.Name, Node: node})
	}
	budget := max(in.Budget, 0)
	res.Clear, budget = take(clears, budget)
	res.Set, _ = take(sets, budget)
	res.Deferred = len(clears) + len(sets) - len(res.Clear) - len(res.Set)
	for _, c := range res.Clear {
		delete(res.Next, c.UID)
	}
	for _, c := range res.Set {
		res.Next[c.UID] = Nomination{Namespace: c.Namespace, Name: c.Name, Node: c.Node}
	}
	return res
}

// Failed puts back, for the changes whose write failed, what was true
// before them (before is the Standing the changes were decided from): a
// failed set leaves the pod as it was, a failed clear leaves it nominated.
func (s State) Failed(failed []Change, before State) {
	for _, c := range failed {
		if n, ok := before[c.UID]; ok {
			s[c.UID] = n
		} else {
			delete(s, c.UID)
		}
	}
}

func take(cs []Change, budget int) ([]Change, int) {
	n := min(len(cs), budget)
	return cs[:n], budget - n
}

func sortedUIDs[V any](m map[types.UID]V) []types.UID {
	out := make([]types.UID, 0, len(m))
	for uid := range m {
		out = append(out, uid)
	}
	slices.SortFunc(out, func(a, b types.UID) int { return cmp.Compare(a, b) })
	return out
}
