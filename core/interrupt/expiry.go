package interrupt

import (
	"slices"
	"strings"
	"time"
)

// Expired is the kind of a node replaced for its age.
const Expired = "expired"

// Aged is a node as expiry reads it.
type Aged struct {
	Name, Group string
	Created     time.Time
	Ready       bool
	// Busy is true while the node is marked or being removed.
	Busy bool
}

// Expiries picks the nodes to replace for their age: per node group, the
// oldest Ready node older than the group's lifetime (none: no limit), and
// none in a group with a node busy, so a group renews one node at a time.
func Expiries(nodes []Aged, lifetime map[string]time.Duration, now time.Time) []Action {
	busy := map[string]bool{}
	for _, n := range nodes {
		if n.Busy {
			busy[n.Group] = true
		}
	}
	oldest := map[string]Aged{}
	for _, n := range nodes {
		max := lifetime[n.Group]
		if n.Group == "" || max <= 0 || busy[n.Group] || !n.Ready || now.Sub(n.Created) <= max {
			continue
		}
		if o, ok := oldest[n.Group]; !ok || n.Created.Before(o.Created) || n.Created.Equal(o.Created) && n.Name < o.Name {
			oldest[n.Group] = n
		}
	}
	out := make([]Action, 0, len(oldest))
	for g, n := range oldest {
		out = append(out, Action{Node: n.Name, Group: g, New: true,
			Mark: Mark{Kind: Expired, Detail: "older than " + lifetime[g].String(), Received: now}})
	}
	slices.SortFunc(out, func(a, b Action) int { return strings.Compare(a.Group, b.Group) })
	return out
}
