package aws

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// PriceTable maps instance types to their price per hour.
type PriceTable map[string]float64

// LoadPriceTable reads a price table file (YAML or JSON):
//
//	m5.large: 0.096
//	m5.xlarge: 0.192
func LoadPriceTable(path string) (PriceTable, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--aws-price-table: %w", err)
	}
	t, err := ParsePriceTable(raw)
	if err != nil {
		return nil, fmt.Errorf("--aws-price-table=%s: %w", path, err)
	}
	return t, nil
}

// ParsePriceTable parses and checks a price table.
func ParsePriceTable(raw []byte) (PriceTable, error) {
	var t PriceTable
	if err := yaml.UnmarshalStrict(raw, &t); err != nil {
		return nil, fmt.Errorf("want a map of instance type to hourly price, e.g. \"m5.large: 0.096\": %w", err)
	}
	if len(t) == 0 {
		return nil, errors.New("no prices given")
	}
	for typ, p := range t {
		if typ == "" || p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("instance type %q: price %v must be a non-negative number", typ, p)
		}
	}
	return t, nil
}

// LabelEKSCapacityType is the label EKS managed node groups put on their
// nodes: ON_DEMAND or SPOT.
const LabelEKSCapacityType = "eks.amazonaws.com/capacityType"

// pricing prices nodes: on-demand instances from --aws-price-table, spot
// instances from EC2's spot price history (spotPrices).
type pricing struct{ cloud *Cloud }

var _ cloudprovider.GroupPricingModel = pricing{}

// NodePrice is the node's hourly price times the hours from start to end.
// A node of a managed group is priced as the group's instances (spot or
// on-demand, or the expected price of a group launching both), unless its
// eks.amazonaws.com/capacityType label says which it is; any other node by
// its instance type label at the on-demand price.
func (p pricing) NodePrice(node *corev1.Node, start, end time.Time) (float64, error) {
	typ := node.Labels[corev1.LabelInstanceTypeStable]
	if typ == "" {
		typ = node.Labels[corev1.LabelInstanceType]
	}
	if typ == "" {
		return 0, fmt.Errorf("price of node %s: it has no %s label", node.Name, corev1.LabelInstanceTypeStable)
	}
	var hourly float64
	var err error
	if group := p.cloud.groupOfNode(node); group != "" {
		hourly, err = p.cloud.hourlyPrice(group, typ, capacityShare(node))
	} else {
		hourly, err = p.cloud.onDemandPrice(typ)
	}
	if err != nil {
		return 0, fmt.Errorf("price of node %s: %w", node.Name, err)
	}
	return hourly * end.Sub(start).Hours(), nil
}

// NodeGroupPrice is the hourly price of the next instance the group
// launches times the hours from start to end: on-demand, spot, or, for a
// group launching both, the price expected from its instances
// distribution.
func (p pricing) NodeGroupPrice(group string, _ *corev1.Node, start, end time.Time) (float64, error) {
	hourly, err := p.cloud.hourlyPrice(group, "", -1)
	if err != nil {
		return 0, fmt.Errorf("price of a node of Auto Scaling Group %s: %w", group, err)
	}
	return hourly * end.Sub(start).Hours(), nil
}

// capacityShare is 1 for a node labelled on-demand by EKS, 0 for one
// labelled spot, -1 when the label does not say.
func capacityShare(node *corev1.Node) float64 {
	switch node.Labels[LabelEKSCapacityType] {
	case "ON_DEMAND":
		return 1
	case "SPOT":
		return 0
	}
	return -1
}

// groupOfNode is the managed group of the node's instance, "" when none.
func (c *Cloud) groupOfNode(node *corev1.Node) string {
	_, id, err := ParseProviderID(node.Spec.ProviderID)
	if err != nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byInstance[id]
}

// hourlyPrice is the hourly price of an instance of typ ("": the type the
// group launches) in group. onDemand is the share of on-demand (1: an
// on-demand instance, 0: a spot one), or negative for the group's share
// of its next instances.
func (c *Cloud) hourlyPrice(group, typ string, onDemand float64) (float64, error) {
	c.mu.Lock()
	g := c.groups[group]
	if g == nil {
		c.mu.Unlock()
		return 0, fmt.Errorf("Auto Scaling Group %s is not managed", group)
	}
	share, zones, launchType, specErr := g.st.onDemand, slices.Clone(g.st.zones), g.st.launchType, g.st.specErr
	c.mu.Unlock()
	if onDemand >= 0 {
		share = onDemand
	}
	switch {
	case typ == "" && specErr != nil:
		return 0, fmt.Errorf("what the group launches is not known: %w", specErr)
	case typ == "":
		typ = launchType
	}
	if typ == "" {
		return 0, errors.New("the group selects instance types by attributes: no instance type to price")
	}
	var od, spot float64
	var err error
	if share > 0 {
		if od, err = c.onDemandPrice(typ); err != nil {
			return 0, err
		}
	}
	if share < 1 {
		if spot, err = c.spot.price(typ, zones, c.clock.Now()); err != nil {
			return 0, err
		}
	}
	return share*od + (1-share)*spot, nil
}

// onDemandPrice is typ's price per hour in --aws-price-table.
func (c *Cloud) onDemandPrice(typ string) (float64, error) {
	price, ok := c.cfg.Prices[typ]
	if !ok {
		return 0, fmt.Errorf("instance type %s is not in --aws-price-table", typ)
	}
	return price, nil
}
