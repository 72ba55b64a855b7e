package local

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// pricing prices nodes by their group's pricePerHour.
type pricing struct{ cloud *Cloud }

var _ cloudprovider.GroupPricingModel = pricing{}

// NodePrice is the group's hourly price times the hours from start to end.
// Nodes are priced by the group in their providerID, or, for template nodes,
// by the group label.
func (p pricing) NodePrice(node *corev1.Node, start, end time.Time) (float64, error) {
	group, _, ok := parseProviderID(node.Spec.ProviderID)
	if !ok {
		group = node.Labels[NodeGroupLabel]
	}
	price, err := p.hourly(group)
	if err != nil {
		return 0, fmt.Errorf("price of node %s: %w", node.Name, err)
	}
	return price * end.Sub(start).Hours(), nil
}

// NodeGroupPrice is the group's hourly price times the hours from start to
// end.
func (p pricing) NodeGroupPrice(group string, _ *corev1.Node, start, end time.Time) (float64, error) {
	price, err := p.hourly(group)
	if err != nil {
		return 0, fmt.Errorf("price of a node of group %s: %w", group, err)
	}
	return price * end.Sub(start).Hours(), nil
}

func (p pricing) hourly(group string) (float64, error) {
	p.cloud.mu.Lock()
	g := p.cloud.groupLocked(group)
	p.cloud.mu.Unlock()
	switch {
	case g == nil:
		return 0, fmt.Errorf("no local node group %q", group)
	case g.spec.PricePerHour == nil:
		return 0, fmt.Errorf("local node group %s has no pricePerHour", group)
	}
	return *g.spec.PricePerHour, nil
}
