// Package snapshot is a read-only cloud provider over a snapshot of a
// cluster's nodes: its node groups are the nodes' groups, named by a node
// label, their target sizes the nodes they have, their templates copies of
// one of their nodes. It lets the node loop decide on a saved cluster
// (`tidal simulate --from-file`); every change it is asked for fails.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
)

// ProviderName is the provider's Name.
const ProviderName = "snapshot"

// DefaultGroupLabels are the node labels that name a node's group, tried
// in order: tidal's local cloud's, then EKS managed node groups', GKE node
// pools' and Karpenter node pools'.
var DefaultGroupLabels = []string{
	local.NodeGroupLabel,
	"eks.amazonaws.com/nodegroup",
	"cloud.google.com/gke-nodepool",
	"karpenter.sh/nodepool",
}

// DefaultDiscoveredHeadroom is how many nodes a group found from its nodes'
// labels may grow by, when no --nodes bounds it.
const DefaultDiscoveredHeadroom = 10

// ErrReadOnly is what every change to a snapshot's node groups returns.
var ErrReadOnly = errors.New("read-only: tidal explain and simulate change nothing")

// Config says which groups there are and how nodes belong to them.
type Config struct {
	// Groups, when given (--nodes), are the only groups, with their
	// bounds; otherwise every value of a group label is a group, with
	// minimum 0 and maximum its nodes plus Headroom.
	Groups []cloudprovider.NodeGroupSpec
	// Labels name a node's group, the first one a node carries winning;
	// empty means DefaultGroupLabels.
	Labels   []string
	Headroom int
}

// Cloud is the read-only provider.
type Cloud struct {
	labels []string
	groups []*nodeGroup
	byName map[string]*nodeGroup
	// assumed says what was assumed of the groups ("" when --nodes gave
	// them).
	assumed string
}

// New builds the provider over nodes. It fails when a --nodes group has
// more nodes than its maximum, or none of its nodes can make a template
// and it has none at all.
func New(nodes []*corev1.Node, cfg Config) (*Cloud, error) {
	c := &Cloud{labels: cfg.Labels, byName: map[string]*nodeGroup{}}
	if len(c.labels) == 0 {
		c.labels = DefaultGroupLabels
	}
	members := map[string][]*corev1.Node{}
	for _, n := range nodes {
		if name := c.groupName(n); name != "" {
			members[name] = append(members[name], n)
		}
	}
	specs := cfg.Groups
	if len(specs) == 0 {
		specs = discovered(members, cfg.Headroom)
		c.assumed = assumption(specs, members, c.labels)
	}
	for _, s := range specs {
		g := &nodeGroup{spec: s, nodes: members[s.Name]}
		if len(g.nodes) > s.MaxSize {
			return nil, fmt.Errorf("node group %s: the snapshot has %d of its nodes, more than its maximum size %d", s.Name, len(g.nodes), s.MaxSize)
		}
		c.groups = append(c.groups, g)
		c.byName[s.Name] = g
	}
	return c, nil
}

// discovered is a group per label value, sorted by name.
func discovered(members map[string][]*corev1.Node, headroom int) []cloudprovider.NodeGroupSpec {
	if headroom <= 0 {
		headroom = DefaultDiscoveredHeadroom
	}
	var out []cloudprovider.NodeGroupSpec
	for name, nodes := range members {
		out = append(out, cloudprovider.NodeGroupSpec{MinSize: 0, MaxSize: len(nodes) + headroom, Name: name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// assumption says how the discovered groups' bounds were made up, and
// that groups without a node in the snapshot are not seen.
func assumption(specs []cloudprovider.NodeGroupSpec, members map[string][]*corev1.Node, labels []string) string {
	if len(specs) == 0 {
		return fmt.Sprintf("Assumed: no --nodes given and no node carries a node group label (%s): no node group can grow.",
			strings.Join(labels, ", "))
	}
	parts := make([]string, 0, len(specs))
	for _, s := range specs {
		parts = append(parts, fmt.Sprintf("%s %d..%d (%d node(s))", s.Name, s.MinSize, s.MaxSize, len(members[s.Name])))
	}
	return fmt.Sprintf("Assumed: no --nodes given, so the node groups are those the snapshot's node labels name, each with "+
		"minimum 0 and maximum its nodes plus --node-group-headroom: %s. Node groups with no node in the snapshot are not seen. "+
		"Give --nodes=MIN:MAX:NAME for each node group to decide with the real bounds.", strings.Join(parts, ", "))
}

// Assumed says what the provider assumed of the node groups for lack of
// --nodes, "" when they were given.
func (c *Cloud) Assumed() string { return c.assumed }

func (c *Cloud) groupName(n *corev1.Node) string {
	for _, l := range c.labels {
		if v := n.Labels[l]; v != "" {
			return v
		}
	}
	return ""
}

// Name is "snapshot".
func (c *Cloud) Name() string { return ProviderName }

// NodeGroups are the groups, in the order of --nodes or by name.
func (c *Cloud) NodeGroups() []cloudprovider.NodeGroup {
	out := make([]cloudprovider.NodeGroup, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	return out
}

// NodeGroupForNode is the group the node's label names, nil when it names
// none of the groups.
func (c *Cloud) NodeGroupForNode(n *corev1.Node) (cloudprovider.NodeGroup, error) {
	if g, ok := c.byName[c.groupName(n)]; ok {
		return g, nil
	}
	return nil, nil
}

// Pricing is not offered.
func (c *Cloud) Pricing() (cloudprovider.PricingModel, error) {
	return nil, cloudprovider.ErrNotImplemented
}

// GPULabel is the label NVIDIA's GPU feature discovery puts on GPU nodes.
func (c *Cloud) GPULabel() string { return "nvidia.com/gpu.present" }

// Refresh does nothing: the snapshot does not change.
func (c *Cloud) Refresh(ctx context.Context) error { return nil }

// Cleanup does nothing.
func (c *Cloud) Cleanup() error { return nil }

// BalancingIgnoredLabels are the group labels: they differ between groups
// alike by construction.
func (c *Cloud) BalancingIgnoredLabels() []string { return slices.Clone(c.labels) }
