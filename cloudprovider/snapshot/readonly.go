package snapshot

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// ReadOnly wraps a provider so that it only describes: every change its
// node groups are asked for fails with ErrReadOnly, before reaching it.
func ReadOnly(p cloudprovider.CloudProvider) cloudprovider.CloudProvider { return &readOnly{p} }

type readOnly struct{ cloudprovider.CloudProvider }

func (r *readOnly) NodeGroups() []cloudprovider.NodeGroup {
	groups := r.CloudProvider.NodeGroups()
	out := make([]cloudprovider.NodeGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, readOnlyGroup{g})
	}
	return out
}

func (r *readOnly) NodeGroupForNode(n *corev1.Node) (cloudprovider.NodeGroup, error) {
	g, err := r.CloudProvider.NodeGroupForNode(n)
	if g == nil || err != nil {
		return nil, err
	}
	return readOnlyGroup{g}, nil
}

// BalancingIgnoredLabels are the wrapped provider's.
func (r *readOnly) BalancingIgnoredLabels() []string {
	return cloudprovider.BalancingIgnoredLabels(r.CloudProvider)
}

type readOnlyGroup struct{ cloudprovider.NodeGroup }

func (g readOnlyGroup) IncreaseSize(delta int) error {
	return fmt.Errorf("node group %s: increase size by %d: %w", g.Id(), delta, ErrReadOnly)
}

func (g readOnlyGroup) DecreaseTargetSize(delta int) error {
	return fmt.Errorf("node group %s: decrease target size by %d: %w", g.Id(), -delta, ErrReadOnly)
}

func (g readOnlyGroup) DeleteNodes(nodes []*corev1.Node) error {
	return fmt.Errorf("node group %s: delete %d node(s): %w", g.Id(), len(nodes), ErrReadOnly)
}
