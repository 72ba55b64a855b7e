package explain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tidal-autoscaler/tidal/core"
)

// NodeGroup writes a node group's sizes and health, its scale-up and what
// becomes of its nodes.
func NodeGroup(d *core.Decisions, name string, w io.Writer) error {
	i := slices.IndexFunc(d.NodeGroups, func(g core.NodeGroupState) bool { return g.Name == name })
	if i < 0 {
		var names []string
		for _, g := range d.NodeGroups {
			names = append(names, g.Name)
		}
		_, err := fmt.Fprintf(w, "Node group %s not found; the node groups are: %s.\n", name, strings.Join(names, ", "))
		return err
	}
	writeGroup(w, d.NodeGroups[i])
	for _, up := range d.ScaleUp.ScaleUps {
		if up.NodeGroup == name {
			fmt.Fprintf(w, "  Scale-up: +%d node(s) (%d -> %d) for %d pod(s): %s\n", up.Nodes, up.From, up.To, len(up.Pods), strings.Join(up.Pods, ", "))
		}
	}
	for _, n := range d.ScaleUp.NoScaleUp {
		if why, ok := n.Reasons[name]; ok {
			fmt.Fprintf(w, "  Cannot host %s: %s\n", strings.Join(n.Pods, ", "), strings.Join(why, ", "))
		}
	}
	for _, node := range slices.Sorted(maps.Keys(d.NodeGroupOfNode)) {
		if d.NodeGroupOfNode[node] == name {
			fmt.Fprintf(w, "  %s\n", nodeAnswer(d, node, name))
		}
	}
	return nil
}

func writeGroup(w io.Writer, g core.NodeGroupState) {
	fmt.Fprintf(w, "Node group %s: min %d, max %d, target %d (%d registered, %d ready, %d upcoming), %s", g.Name, g.Min, g.Max,
		g.Target, g.Registered, g.Ready, g.Upcoming, g.Health)
	if g.Reason != "" {
		fmt.Fprintf(w, ": %s", g.Reason)
	}
	fmt.Fprintln(w, ".")
}

// Simulate writes the whole plan: each scale-up, the pods no group can
// host, and the nodes that can go and those that stay.
func Simulate(d *core.Decisions, w io.Writer) error {
	if !d.Healthy {
		fmt.Fprintf(w, "The cluster is unhealthy, tidal does not scale: %s\n", d.HealthReason)
	}
	su := d.ScaleUp
	fmt.Fprintf(w, "Scale-up: %d pending pod(s), %d fit existing or upcoming nodes, %d expendable, %d too young.\n",
		len(su.Pending), su.FitExisting, su.Expendable, su.TooYoung)
	for _, up := range su.ScaleUps {
		fmt.Fprintf(w, "  Grow %s by %d node(s) (%d -> %d) for %d pod(s)", up.NodeGroup, up.Nodes, up.From, up.To, len(up.Pods))
		if len(up.Expander) > 0 {
			last := up.Expander[len(up.Expander)-1]
			fmt.Fprintf(w, ", picked by %s", last.Strategy)
		}
		fmt.Fprintln(w)
	}
	for _, n := range su.NoScaleUp {
		fmt.Fprintf(w, "  No node group can host %s:\n", strings.Join(n.Pods, ", "))
		writeReasons(w, n.Reasons)
	}
	sd := d.ScaleDown
	fmt.Fprintf(w, "Scale-down: %d node(s) can be removed, %d cannot.\n", len(sd.Unneeded), len(sd.Unremovable))
	for _, u := range sd.Unneeded {
		fmt.Fprintf(w, "  %s (%s): unneeded, utilization %.2f\n", u.Node, u.NodeGroup, u.Utilization)
	}
	for _, u := range sd.Unremovable {
		fmt.Fprintf(w, "  %s: stays, %s\n", u.Node, unremovableWhy(u))
	}
	if len(d.Replacing) > 0 {
		fmt.Fprintf(w, "Replacing: %d node(s).\n", len(d.Replacing))
	}
	for _, r := range d.Replacing {
		fmt.Fprintf(w, "  %s (%s): %s\n", r.Node, r.NodeGroup, replacingWhy(r))
	}
	fmt.Fprintln(w, "Node groups:")
	for _, g := range d.NodeGroups {
		fmt.Fprint(w, "  ")
		writeGroup(w, g)
	}
	return nil
}
