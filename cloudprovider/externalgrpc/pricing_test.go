package externalgrpc_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
)

// TestPricingNodePriceOverTheWire prices a group's template node through
// PricingNodePrice, served by tidal's server over the local cloud: the
// price the server's provider gives comes back, and a group the server
// cannot price is an error, not 0.
func TestPricingNodePriceOverTheWire(t *testing.T) {
	cfg, err := local.ParseConfig([]byte("nodeGroups:\n" +
		"- {name: priced, maxSize: 2, zone: z, cpu: '4', memory: 16Gi, pricePerHour: 0.19}\n" +
		"- {name: unpriced, maxSize: 2, zone: z, cpu: '8', memory: 32Gi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cloud, err := local.New(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, cloud, nil, "127.0.0.1:0")
	p := client(t, plain(addr))
	model, err := p.Pricing()
	if err != nil {
		t.Fatalf("Pricing: %v", err)
	}
	template := func(group string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "template-" + group, Labels: map[string]string{local.NodeGroupLabel: group}}}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	if got, err := cloudprovider.GroupNodePrice(model, "priced", template("priced"), start, end); err != nil || got != 0.38 {
		t.Errorf("price of a node of priced over 2 h = %v, %v; want 0.38", got, err)
	}
	if got, err := cloudprovider.GroupNodePrice(model, "unpriced", template("unpriced"), start, end); err == nil ||
		!strings.Contains(err.Error(), "has no pricePerHour") {
		t.Errorf("price of a node of unpriced = %v, %v; want the server's error saying it has no pricePerHour", got, err)
	}
}
