package interrupt

import (
	"slices"
	"strings"
	"time"
)

// Kinds of the nodes replaced though the cloud does not take them: for
// their age, and because they no longer match what their group launches.
const (
	Expired = "expired"
	Drifted = "drifted"
)

// Aged is a node as expiry reads it.
type Aged struct {
	Name, Group string
	Created     time.Time
	Ready       bool
	// Busy is true while the node is marked or being removed.
	Busy bool
	// Drift says how the node differs from what its group launches
	// ("": it does not, or that is not looked at).
	Drift string
}

// Expiries picks the nodes to renew: per node group, the oldest Ready node
// that drifted or is older than the group's lifetime (none: no limit),
// and none in a group with a node busy, so a group renews one node at a
// time.
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
		expired := max > 0 && now.Sub(n.Created) > max
		if n.Group == "" || busy[n.Group] || !n.Ready || !expired && n.Drift == "" {
			continue
		}
		if o, ok := oldest[n.Group]; !ok || n.Created.Before(o.Created) || n.Created.Equal(o.Created) && n.Name < o.Name {
			oldest[n.Group] = n
		}
	}
	out := make([]Action, 0, len(oldest))
	for g, n := range oldest {
		m := Mark{Kind: Drifted, Detail: n.Drift, Received: now}
		if n.Drift == "" {
			m = Mark{Kind: Expired, Detail: "older than " + lifetime[g].String(), Received: now}
		}
		out = append(out, Action{Node: n.Name, Group: g, New: true, Mark: m})
	}
	slices.SortFunc(out, func(a, b Action) int { return strings.Compare(a.Group, b.Group) })
	return out
}
