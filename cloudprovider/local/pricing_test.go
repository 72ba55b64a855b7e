package local

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// TestPricing prices a group's nodes by its pricePerHour, a group without
// one and a node of no group as errors, never as 0.
func TestPricing(t *testing.T) {
	cfg, err := ParseConfig([]byte("nodeGroups:\n" +
		"- {name: priced, maxSize: 2, zone: z, cpu: '4', memory: 16Gi, pricePerHour: 0.19}\n" +
		"- {name: unpriced, maxSize: 2, zone: z, cpu: '8', memory: 32Gi}\n"))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	c, err := New(nil, cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	m, err := c.Pricing()
	if err != nil {
		t.Fatalf("pricing: %v", err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)

	live := buildNode(cfg.NodeGroups[0], "priced-00001")
	if p, err := m.NodePrice(live, start, end); err != nil || p != 0.38 {
		t.Errorf("NodePrice of a live node = %v, %v; want 0.38 (2 h at 0.19)", p, err)
	}
	// A template made from a live node keeps the group label, not the
	// providerID.
	template := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "template-1", Labels: map[string]string{NodeGroupLabel: "priced"}}}
	if p, err := m.NodePrice(template, start, end); err != nil || p != 0.38 {
		t.Errorf("NodePrice of a template = %v, %v; want 0.38", p, err)
	}
	if p, err := cloudprovider.GroupNodePrice(m, "priced", &corev1.Node{}, start, end); err != nil || p != 0.38 {
		t.Errorf("GroupNodePrice of priced = %v, %v; want 0.38", p, err)
	}
	for name, price := range map[string]func() (float64, error){
		"a group without pricePerHour": func() (float64, error) {
			return cloudprovider.GroupNodePrice(m, "unpriced", &corev1.Node{}, start, end)
		},
		"a node of a group without pricePerHour": func() (float64, error) {
			return m.NodePrice(buildNode(cfg.NodeGroups[1], "unpriced-00001"), start, end)
		},
		"a group that does not exist": func() (float64, error) {
			return cloudprovider.GroupNodePrice(m, "gone", &corev1.Node{}, start, end)
		},
	} {
		if p, err := price(); err == nil {
			t.Errorf("%s is priced %v; want an error", name, p)
		} else if !strings.Contains(err.Error(), "no pricePerHour") && !strings.Contains(err.Error(), "no local node group") {
			t.Errorf("%s: error %q does not say why", name, err)
		}
	}
}
