package snapshot

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: "p://" + name, Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}}}
}

func TestDiscoveredGroups(t *testing.T) {
	nodes := []*corev1.Node{node("a1", map[string]string{"eks.amazonaws.com/nodegroup": "a"}),
		node("a2", map[string]string{"eks.amazonaws.com/nodegroup": "a"}),
		node("b1", map[string]string{"karpenter.sh/nodepool": "b"}), node("x", nil)}
	c, err := New(nodes, Config{Headroom: 3})
	if err != nil {
		t.Fatal(err)
	}
	groups := c.NodeGroups()
	if len(groups) != 2 || groups[0].Id() != "a" || groups[0].MaxSize() != 5 || groups[0].MinSize() != 0 {
		t.Fatalf("groups %v, want a (0..5) and b", groups)
	}
	if size, _ := groups[0].TargetSize(); size != 2 {
		t.Errorf("target of a %d, want its 2 nodes", size)
	}
	if g, err := c.NodeGroupForNode(nodes[3]); g != nil || err != nil {
		t.Errorf("group of an unlabelled node %v, %v; want none", g, err)
	}
	tmpl, err := groups[1].TemplateNodeInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ts := tmpl.Node.Spec.Taints; len(ts) != 1 || ts[0].Key != "dedicated" || tmpl.Node.Spec.ProviderID != "" {
		t.Errorf("template taints %v, providerID %q: want the group's own taint only and no providerID", ts, tmpl.Node.Spec.ProviderID)
	}
	for _, err := range []error{groups[0].IncreaseSize(context.Background(), 1), groups[0].DeleteNodes(context.Background(), nodes[:1]), groups[0].DecreaseTargetSize(context.Background(), -1)} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("change: %v, want ErrReadOnly", err)
		}
	}
}

func TestGivenGroupsAndLabel(t *testing.T) {
	nodes := []*corev1.Node{node("a1", map[string]string{"pool": "a"}), node("a2", map[string]string{"pool": "a"})}
	c, err := New(nodes, Config{Labels: []string{"pool"}, Groups: []cloudprovider.NodeGroupSpec{{MinSize: 1, MaxSize: 4, Name: "a"}, {MaxSize: 2, Name: "empty"}}})
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := c.NodeGroupForNode(nodes[0]); g == nil || g.Id() != "a" || g.MaxSize() != 4 {
		t.Errorf("group of a1 %v, want a (max 4)", g)
	}
	if _, err := c.NodeGroups()[1].TemplateNodeInfo(context.Background()); !errors.Is(err, cloudprovider.ErrNotImplemented) {
		t.Errorf("template of a group without nodes: %v, want ErrNotImplemented", err)
	}
	if _, err := New(nodes, Config{Labels: []string{"pool"}, Groups: []cloudprovider.NodeGroupSpec{{MaxSize: 1, Name: "a"}}}); err == nil {
		t.Error("a group with more nodes than its maximum was accepted")
	}
}
