package cloudprovider

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ErrDryRun is returned by a DryRun provider's node groups for every call
// that would change the cloud.
var ErrDryRun = errors.New("dry run: the cloud is not changed")

// DryRun wraps p so that nothing changes the cloud through it: IncreaseSize,
// DecreaseTargetSize and DeleteNodes fail with ErrDryRun, and refused (when
// set) is told of each such call. Reads pass through. It is shadow mode's
// second line: the node loop in dry-run makes no such call in the first
// place, and refused counting one means a bug.
func DryRun(p CloudProvider, refused func(method, group string)) CloudProvider {
	if refused == nil {
		refused = func(string, string) {}
	}
	return &dryRunCloud{CloudProvider: p, refused: refused}
}

type dryRunCloud struct {
	CloudProvider
	refused func(method, group string)
}

var (
	_ InstanceErrorNotifier = (*dryRunCloud)(nil)
	_ BalancingLabelIgnorer = (*dryRunCloud)(nil)
)

func (c *dryRunCloud) NodeGroups() []NodeGroup {
	groups := c.CloudProvider.NodeGroups()
	out := make([]NodeGroup, len(groups))
	for i, g := range groups {
		out[i] = c.wrap(g)
	}
	return out
}

func (c *dryRunCloud) NodeGroupForNode(node *corev1.Node) (NodeGroup, error) {
	g, err := c.CloudProvider.NodeGroupForNode(node)
	if err != nil || g == nil {
		return nil, err
	}
	return c.wrap(g), nil
}

// NotifyInstanceErrors passes the function on when the provider takes one.
func (c *dryRunCloud) NotifyInstanceErrors(notify func(group string)) {
	if n, ok := c.CloudProvider.(InstanceErrorNotifier); ok {
		n.NotifyInstanceErrors(notify)
	}
}

// BalancingIgnoredLabels are the provider's.
func (c *dryRunCloud) BalancingIgnoredLabels() []string {
	return BalancingIgnoredLabels(c.CloudProvider)
}

func (c *dryRunCloud) wrap(g NodeGroup) NodeGroup {
	if g == nil {
		return nil
	}
	return &dryRunGroup{NodeGroup: g, refused: c.refused}
}

type dryRunGroup struct {
	NodeGroup
	refused func(method, group string)
}

func (g *dryRunGroup) refuse(method string) error {
	g.refused(method, g.Id())
	return fmt.Errorf("%s of node group %s: %w", method, g.Id(), ErrDryRun)
}

func (g *dryRunGroup) IncreaseSize(context.Context, int) error { return g.refuse("IncreaseSize") }
func (g *dryRunGroup) DecreaseTargetSize(context.Context, int) error {
	return g.refuse("DecreaseTargetSize")
}
func (g *dryRunGroup) DeleteNodes(context.Context, []*corev1.Node) error {
	return g.refuse("DeleteNodes")
}
