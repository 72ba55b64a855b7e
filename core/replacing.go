package core

import (
	"slices"
	"strings"
	"time"

	"github.com/tidal-autoscaler/tidal/core/interrupt"
)

// Replacing states.
const (
	// ReplacingDraining: the node is marked (tainted, cordoned), drained
	// and then deleted.
	ReplacingDraining = "Draining"
	// ReplacingWaitingForCapacity: a node past its lifetime or drifted
	// waits for the capacity asked for its pods to be Ready before it is
	// marked.
	ReplacingWaitingForCapacity = "WaitingForCapacity"
)

// ReplacingEntry is a node being replaced, and why: the cloud takes it
// away (the interruption's kind), it is past its lifetime (expired) or no
// longer matches what its group launches (drifted). The status ConfigMap
// and tidal explain show the same entries.
type ReplacingEntry struct {
	Node      string `json:"node"`
	NodeGroup string `json:"nodeGroup"`
	Cause     string `json:"cause"`
	Detail    string `json:"detail,omitempty"`
	State     string `json:"state"`
	// Deadline is when the node goes whatever its pods do (none: the
	// drain honours every PDB); Since when tidal learnt of it.
	Deadline string `json:"deadline,omitempty"`
	Since    string `json:"since,omitempty"`
}

// replacingNode is a node being replaced as the iteration holds it.
type replacingNode struct {
	node, group string
	mark        interrupt.Mark
	waiting     bool
}

// replacingOf are the nodes marked as taken away (marks), and those past
// their lifetime or drifted (expired) of which started were marked this
// iteration, the others waiting for capacity; sorted by node.
func replacingOf(groupOf map[string]string, marks map[string]interrupt.Mark, expired []renewal, started map[string]bool) []replacingNode {
	var out []replacingNode
	for n, m := range marks {
		out = append(out, replacingNode{node: n, group: groupOf[n], mark: m})
	}
	for _, r := range expired {
		out = append(out, replacingNode{node: r.Node, group: r.Group, mark: r.Mark, waiting: !started[r.Node]})
	}
	slices.SortFunc(out, func(a, b replacingNode) int { return strings.Compare(a.node, b.node) })
	return out
}

// replacingEntries renders the nodes being replaced, at most
// maxStatusNodes.
func replacingEntries(nodes []replacingNode) []ReplacingEntry {
	var out []ReplacingEntry
	for _, n := range nodes[:min(len(nodes), maxStatusNodes)] {
		e := ReplacingEntry{Node: n.node, NodeGroup: n.group, Cause: n.mark.Kind, Detail: n.mark.Detail, State: ReplacingDraining,
			Deadline: formatTime(n.mark.Deadline), Since: formatTime(n.mark.Received)}
		if n.waiting {
			// Not marked yet: it has no since.
			e.State, e.Since = ReplacingWaitingForCapacity, ""
		}
		out = append(out, e)
	}
	return out
}

// formatTime is t in RFC 3339, UTC; "" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
