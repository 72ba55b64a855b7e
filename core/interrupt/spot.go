package interrupt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// SpotReclaimed is the error code under which a node group is backed off
// while the cloud reclaims one of its spot instances: the capacity pool
// the group launches from is short, as after a launch that failed for
// want of capacity, so its replacement and other pods go to other groups
// or capacity types for the backoff's time.
const SpotReclaimed = "SpotInterruption"

// Reclaim is a node group to back off because the cloud reclaims a spot
// instance of it.
type Reclaim struct {
	Group string
	// Info is the capacity error the group is backed off for.
	Info cloudprovider.InstanceErrorInfo
}

// Reclaimed are the node groups of the marked nodes a spot interruption
// takes away, each once (for its first node by name), sorted by group.
// A rebalance recommendation is a risk, not a reclaim: its group stays.
func Reclaimed(marked []Action) []Reclaim {
	nodes := map[string][]Action{}
	for _, a := range marked {
		if a.Group != "" && a.Mark.Kind == cloudprovider.SpotInterruption {
			nodes[a.Group] = append(nodes[a.Group], a)
		}
	}
	out := make([]Reclaim, 0, len(nodes))
	for g, acts := range nodes {
		first := slices.MinFunc(acts, func(a, b Action) int { return strings.Compare(a.Node, b.Node) })
		msg := fmt.Sprintf("the cloud reclaims spot node %s", first.Node)
		if first.Mark.Detail != "" {
			msg += " (" + first.Mark.Detail + ")"
		}
		if len(acts) > 1 {
			msg += fmt.Sprintf(" and %d more", len(acts)-1)
		}
		out = append(out, Reclaim{Group: g, Info: cloudprovider.InstanceErrorInfo{
			ErrorClass: cloudprovider.OutOfResourcesErrorClass, ErrorCode: SpotReclaimed, ErrorMessage: msg}})
	}
	slices.SortFunc(out, func(a, b Reclaim) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// LastResort says whether scale-up decides once more with the groups
// backed off only for a spot reclaim (avoided) available again, and the
// groups to decide with: when the plan left pods that no group helped
// and an avoided group was among those that could not, because it was
// backed off. Other groups come first; a pod only an avoided group can
// run still gets capacity there rather than waiting out the backoff.
func LastResort(groups []scaleup.Group, plan *scaleup.Plan, avoided map[string]bool) ([]scaleup.Group, bool) {
	if plan == nil || len(avoided) == 0 {
		return groups, false
	}
	blocked := false
	for _, n := range plan.NoScaleUp {
		for g := range n.ByNodeGroup {
			blocked = blocked || avoided[g]
		}
	}
	if !blocked {
		return groups, false
	}
	next := slices.Clone(groups)
	for i := range next {
		if avoided[next[i].ID] {
			next[i].Unavailable = ""
		}
	}
	return next, true
}
