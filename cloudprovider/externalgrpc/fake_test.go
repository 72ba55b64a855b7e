package externalgrpc_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// fakeCloud is a provider for the server under test: its groups' sizes in
// memory, a template for groups with one, no pricing and no options.
type fakeCloud struct {
	mu     sync.Mutex
	groups []*fakeGroup
	block  chan struct{} // when set, TargetSize waits for it to close
	// calls counts the RPCs served, by name.
	calls map[string]int
}

type fakeGroup struct {
	cloud     *fakeCloud
	id        string
	min, max  int
	size      int
	deleted   []string
	template  *corev1.Node
	instances []cloudprovider.Instance
}

func newFakeCloud() *fakeCloud {
	c := &fakeCloud{calls: map[string]int{}}
	tmpl := &corev1.Node{}
	tmpl.Name = "template-b"
	tmpl.Labels = map[string]string{"group": "b"}
	tmpl.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	c.groups = []*fakeGroup{
		{cloud: c, id: "a", min: 1, max: 5, size: 2, instances: []cloudprovider.Instance{
			{Id: "fake://a-0", Status: &cloudprovider.InstanceStatus{State: cloudprovider.InstanceRunning}},
			{Id: "fake://a-1", Status: &cloudprovider.InstanceStatus{State: cloudprovider.InstanceCreating,
				ErrorInfo: &cloudprovider.InstanceErrorInfo{ErrorClass: cloudprovider.OutOfResourcesErrorClass, ErrorCode: "NoCapacity", ErrorMessage: "none left"}}},
		}},
		{cloud: c, id: "b", min: 0, max: 3, template: tmpl},
	}
	return c
}

func (c *fakeCloud) Name() string { return "fake" }
func (c *fakeCloud) NodeGroups() []cloudprovider.NodeGroup {
	out := make([]cloudprovider.NodeGroup, len(c.groups))
	for i, g := range c.groups {
		out[i] = g
	}
	return out
}
func (c *fakeCloud) NodeGroupForNode(n *corev1.Node) (cloudprovider.NodeGroup, error) {
	for _, g := range c.groups {
		if n.Labels["group"] == g.id {
			return g, nil
		}
	}
	return nil, nil
}
func (c *fakeCloud) Pricing() (cloudprovider.PricingModel, error) {
	return nil, cloudprovider.ErrNotImplemented
}
func (c *fakeCloud) GPULabel() string                  { return "fake/gpu" }
func (c *fakeCloud) Refresh(ctx context.Context) error { return nil }
func (c *fakeCloud) Cleanup() error                    { return nil }

func (g *fakeGroup) Id() string   { return g.id }
func (g *fakeGroup) MinSize() int { return g.min }
func (g *fakeGroup) MaxSize() int { return g.max }
func (g *fakeGroup) TargetSize() (int, error) {
	g.cloud.mu.Lock()
	block := g.cloud.block
	g.cloud.mu.Unlock()
	if block != nil {
		<-block
	}
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	return g.size, nil
}
func (g *fakeGroup) IncreaseSize(ctx context.Context, delta int) error {
	g.cloud.mu.Lock()
	block := g.cloud.block
	g.cloud.mu.Unlock()
	if block != nil {
		<-block
	}
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	if g.size+delta > g.max {
		return fmt.Errorf("group %s: %d more would exceed max %d", g.id, delta, g.max)
	}
	g.size += delta
	return nil
}
func (g *fakeGroup) DecreaseTargetSize(ctx context.Context, delta int) error {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	g.size += delta
	return nil
}
func (g *fakeGroup) DeleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	for _, n := range nodes {
		g.deleted = append(g.deleted, n.Name+"="+n.Spec.ProviderID)
	}
	g.size -= len(nodes)
	return nil
}
func (g *fakeGroup) Nodes() ([]cloudprovider.Instance, error) { return g.instances, nil }
func (g *fakeGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	if g.template == nil {
		return nil, cloudprovider.ErrNotImplemented
	}
	return &cloudprovider.NodeTemplate{Node: g.template.DeepCopy()}, nil
}
func (g *fakeGroup) GetOptions(cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	return nil, cloudprovider.ErrNotImplemented
}

// called is how many times the RPC was served.
func (c *fakeCloud) called(rpc string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[rpc]
}
