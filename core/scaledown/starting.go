package scaledown

import (
	"cmp"
	"fmt"
	"slices"
)

// StartingNode is a registered node of a group still starting (not yet
// ready, within its provision time, not being removed), as one iteration
// sees it.
type StartingNode struct {
	Name, Group string
	// Pods counts the pods bound to the node and the pending pods
	// nominated to it, DaemonSet and mirror pods aside.
	Pods int
	// Planned is set when this iteration's scale-up decision placed
	// pending pods (or the pods pictured for provision-ahead and
	// headroom) on the node.
	Planned bool
}

// StartingGroup is what bounds the cancellations of a group's starting
// nodes.
type StartingGroup struct {
	// Target is the group's target size; Min its minimum this iteration
	// (the cloud's, raised by an active schedule).
	Target, Min int
	// Held says why the group's starting nodes stay whatever the plan
	// ("": they go when unneeded), such as an allocation trigger that
	// asked for nodes with no pod waiting.
	Held string
}

// StartingInput is one iteration's view of the starting nodes.
type StartingInput struct {
	Nodes  []StartingNode
	Groups map[string]StartingGroup
	// Unsettled says why the scale-up decision cannot tell which nodes
	// the pending pods need ("" when it can): it was not made or failed,
	// ran out of time, or left pods for a later decision.
	Unsettled string
}

// StartingDecision says which starting nodes go and why the others with
// nothing on them stay.
type StartingDecision struct {
	// Cancel are the nodes to remove, in name order.
	Cancel []StartingNode
	// Kept maps each starting node with no pod and no planned pod that
	// stays to why.
	Kept map[string]string
}

// UnneededStarting decides which starting nodes no plan needs any more: no
// pod is bound or nominated to the node, and the scale-up decision, made
// whole, placed no pending pod there (the scheduler bound the pods planned
// for it on other nodes while it started). Such a node would come up empty
// and wait for scale-down; it is removed before it is ready instead. A
// group never goes below its minimum: the last nodes by name go first,
// since the decision fills a group's starting nodes in name order. Nothing
// goes while the decision is unsettled, or from a held group.
func UnneededStarting(in StartingInput) StartingDecision {
	out := StartingDecision{Kept: map[string]string{}}
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b StartingNode) int { return cmp.Compare(b.Name, a.Name) })
	cancelled := map[string]int{}
	for _, n := range nodes {
		if n.Pods > 0 || n.Planned {
			continue
		}
		g, ok := in.Groups[n.Group]
		switch {
		case in.Unsettled != "":
			out.Kept[n.Name] = in.Unsettled
		case !ok:
			out.Kept[n.Name] = "its node group was not observed"
		case g.Held != "":
			out.Kept[n.Name] = g.Held
		case g.Target-cancelled[n.Group] <= g.Min:
			out.Kept[n.Name] = fmt.Sprintf("node group %s at its minimum size (%d)", n.Group, g.Min)
		default:
			cancelled[n.Group]++
			out.Cancel = append(out.Cancel, n)
		}
	}
	slices.Reverse(out.Cancel)
	return out
}
