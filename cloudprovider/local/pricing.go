package local

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// pricing prices nodes by their group's hourly price.
type pricing struct{ cloud *Cloud }

// NodePrice is the group's hourly price times the hours from start to end.
// Nodes are priced by the group in their providerID, or, for template nodes,
// by the group label.
func (p pricing) NodePrice(node *corev1.Node, start, end time.Time) (float64, error) {
	group, _, ok := parseProviderID(node.Spec.ProviderID)
	if !ok {
		group = node.Labels[NodeGroupLabel]
	}
	p.cloud.mu.Lock()
	g := p.cloud.groupLocked(group)
	p.cloud.mu.Unlock()
	if g == nil {
		return 0, fmt.Errorf("price of node %s: it belongs to no local node group", node.Name)
	}
	return g.spec.PricePerHour * end.Sub(start).Hours(), nil
}
