package aws

import (
	"errors"
	"fmt"
	"math"
	"os"
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

// pricing prices nodes by their instance type label.
type pricing struct{ table PriceTable }

var _ cloudprovider.PricingModel = pricing{}

// NodePrice is the hourly price of the node's instance type times the hours
// from start to end. Template nodes carry the label too.
func (p pricing) NodePrice(node *corev1.Node, start, end time.Time) (float64, error) {
	typ := node.Labels[corev1.LabelInstanceTypeStable]
	if typ == "" {
		typ = node.Labels[corev1.LabelInstanceType]
	}
	if typ == "" {
		return 0, fmt.Errorf("price of node %s: it has no %s label", node.Name, corev1.LabelInstanceTypeStable)
	}
	price, ok := p.table[typ]
	if !ok {
		return 0, fmt.Errorf("price of node %s: instance type %s is not in --aws-price-table", node.Name, typ)
	}
	return price * end.Sub(start).Hours(), nil
}
