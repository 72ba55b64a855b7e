package scaledown

import (
	"cmp"
	"fmt"
	"slices"
)

// NewNode is a node of a group that tidal saw starting (registered, not
// yet ready, within its provision time) and has not seen run a pod since:
// still starting, or ready and in Unused.
type NewNode struct {
	Name, Group string
	// Ready is set once the node can take pods.
	Ready bool
	// Bound counts the pods bound to the node, Nominated the pending pods
	// nominated to it, DaemonSet and mirror pods aside.
	Bound, Nominated int
	// Planned is set when this iteration's scale-up decision placed
	// pending pods (or the pods pictured for provision-ahead and
	// headroom) on the node.
	Planned bool
	// Held says why the node stays whatever the plan (its scale-down
	// disabled by annotation); "" when it may go.
	Held string
}

// NewNodeGroup is what bounds the removals of a group's new nodes.
type NewNodeGroup struct {
	// Target is the group's target size; Min its minimum this iteration
	// (the cloud's, raised by an active schedule).
	Target, Min int
	// Held says why the group's new nodes stay whatever the plan, such as
	// an allocation trigger that asked for nodes with no pod waiting; ""
	// when they may go.
	Held string
}

// UnusedInput is one iteration's view of the new nodes.
type UnusedInput struct {
	Nodes  []NewNode
	Groups map[string]NewNodeGroup
	// Unused are the nodes seen new and never running a pod up to the
	// last iteration (the last decision's Unused).
	Unused map[string]bool
	// Unsettled says why the scale-up decision cannot tell which nodes
	// the pending pods need ("" when it can): it ran out of time, or left
	// pods for a later decision.
	Unsettled string
}

// UnusedDecision says which new nodes go, why the others with no pod stay,
// and which nodes are new and unused after this iteration.
type UnusedDecision struct {
	// Remove are the nodes to remove, in name order.
	Remove []NewNode
	// Kept maps each new node with no pod and no planned pod that stays
	// to why.
	Kept map[string]string
	// Unused is the state for the next iteration: the nodes still
	// starting, or ready and unused since they started, with no pod
	// bound.
	Unused map[string]bool
}

// UnusedNewNodes decides which new nodes no plan needs: no pod was seen
// bound to the node since it started, none is bound or nominated to it
// now, and the scale-up decision, made whole, placed no pending pod there.
// The scheduler bound the pods planned for such a node on others while it
// started (a node that became ready while their nominations were cleared
// took them); the node would wait empty for scale-down. A ready node counts
// only when it was seen starting and unused in every iteration since (in
// Unused), so a node that ran pods and emptied is scale-down's. A group
// never goes below its minimum: the last nodes by name go first, since
// the decision fills a group's starting nodes in name order. Nothing goes
// while the decision is unsettled, nor a held node or a node of a held
// group.
func UnusedNewNodes(in UnusedInput) UnusedDecision {
	out := UnusedDecision{Kept: map[string]string{}, Unused: map[string]bool{}}
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b NewNode) int { return cmp.Compare(b.Name, a.Name) })
	removed := map[string]int{}
	for _, n := range nodes {
		if n.Bound > 0 || n.Ready && !in.Unused[n.Name] {
			continue
		}
		out.Unused[n.Name] = true
		if n.Nominated > 0 || n.Planned {
			continue
		}
		g, ok := in.Groups[n.Group]
		switch {
		case in.Unsettled != "":
			out.Kept[n.Name] = in.Unsettled
		case n.Held != "":
			out.Kept[n.Name] = n.Held
		case !ok:
			out.Kept[n.Name] = "its node group was not observed"
		case g.Held != "":
			out.Kept[n.Name] = g.Held
		case g.Target-removed[n.Group] <= g.Min:
			out.Kept[n.Name] = fmt.Sprintf("node group %s at its minimum size (%d)", n.Group, g.Min)
		default:
			removed[n.Group]++
			out.Remove = append(out.Remove, n)
		}
	}
	slices.Reverse(out.Remove)
	return out
}
