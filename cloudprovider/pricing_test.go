package cloudprovider

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// nodePricer prices every node at 1 per hour.
type nodePricer struct{}

func (nodePricer) NodePrice(_ *corev1.Node, start, end time.Time) (float64, error) {
	return end.Sub(start).Hours(), nil
}

// groupPricer prices group "spot" at 0.3 per hour and knows no other.
type groupPricer struct{ nodePricer }

func (groupPricer) NodeGroupPrice(group string, _ *corev1.Node, start, end time.Time) (float64, error) {
	if group != "spot" {
		return 0, errors.New("no price")
	}
	return 0.3 * end.Sub(start).Hours(), nil
}

type pricedProvider struct {
	CloudProvider
	m PricingModel
}

func (p pricedProvider) Pricing() (PricingModel, error) { return p.m, nil }

// TestGroupNodePrice asks the group of a model that prices groups, and the
// template node of one that does not; the dry-run decorator hands out the
// provider's own model, so a group price is not lost behind it.
func TestGroupNodePrice(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	if p, err := GroupNodePrice(nodePricer{}, "any", &corev1.Node{}, start, end); err != nil || p != 2 {
		t.Errorf("a model without group prices: %v, %v; want NodePrice of the template, 2", p, err)
	}
	m, err := DryRun(pricedProvider{m: groupPricer{}}, nil).Pricing()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := GroupNodePrice(m, "spot", &corev1.Node{}, start, end); err != nil || p != 0.6 {
		t.Errorf("group spot through DryRun: %v, %v; want the group's price, 0.6", p, err)
	}
	if p, err := GroupNodePrice(m, "other", &corev1.Node{}, start, end); err == nil {
		t.Errorf("a group the model cannot price: %v, want an error, not the template's NodePrice", p)
	}
}
