package local

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// instance is one machine of a group, named like its Node.
type instance struct {
	name       string
	state      cloudprovider.InstanceState
	readyAt    time.Time
	fault      Fault
	errorInfo  *cloudprovider.InstanceErrorInfo
	registered bool
}

type nodeGroup struct {
	cloud     *Cloud
	spec      GroupSpec
	instances map[string]*instance
	// next is the number of the next node name.
	next int
}

var _ cloudprovider.NodeGroup = (*nodeGroup)(nil)

func (g *nodeGroup) Id() string   { return g.spec.Name }
func (g *nodeGroup) MinSize() int { return g.spec.MinSize }
func (g *nodeGroup) MaxSize() int { return g.spec.MaxSize }

// TargetSize is the number of machines the group has or is creating.
func (g *nodeGroup) TargetSize() (int, error) {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	return len(g.instances), nil
}

// IncreaseSize requests delta machines; they appear after the group's
// provisioning delay.
func (g *nodeGroup) IncreaseSize(ctx context.Context, delta int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node group %s: increase size: %w", g.spec.Name, err)
	}
	if delta <= 0 {
		return fmt.Errorf("node group %s: increase size by %d: delta must be positive", g.spec.Name, delta)
	}
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	if g.spec.Fault == FaultAPIError {
		return fmt.Errorf("node group %s: the cloud API refused the request (simulated api-error fault)", g.spec.Name)
	}
	if size := len(g.instances) + delta; size > g.spec.MaxSize {
		return fmt.Errorf("node group %s: size %d would exceed max size %d", g.spec.Name, size, g.spec.MaxSize)
	}
	g.addInstancesLocked(delta, g.cloud.clock.Now())
	return nil
}

func (g *nodeGroup) addInstancesLocked(n int, now time.Time) {
	for i := 0; i < n; i++ {
		name := nodeName(g.spec.Name, g.next)
		g.next++
		g.instances[name] = &instance{
			name: name, state: cloudprovider.InstanceCreating,
			readyAt: now.Add(g.spec.ProvisioningDelay.Duration), fault: g.spec.Fault,
		}
	}
}

// adoptLocked records a machine found as a Node object.
func (g *nodeGroup) adoptLocked(name string) {
	if n, ok := nodeNumber(g.spec.Name, name); ok && n >= g.next {
		g.next = n + 1
	}
	if _, ok := g.instances[name]; !ok {
		g.instances[name] = &instance{name: name, state: cloudprovider.InstanceRunning, registered: true}
	}
}

func nodeNumber(group, name string) (int, bool) {
	suffix, ok := strings.CutPrefix(name, group+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(suffix)
	return n, err == nil
}

// DecreaseTargetSize cancels -delta machines that have not registered,
// failed ones first. It never touches a registered node.
func (g *nodeGroup) DecreaseTargetSize(ctx context.Context, delta int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node group %s: decrease target size: %w", g.spec.Name, err)
	}
	if delta >= 0 {
		return fmt.Errorf("node group %s: decrease target size by %d: delta must be negative", g.spec.Name, delta)
	}
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	var candidates []*instance
	for _, in := range sortedInstances(g.instances) {
		if in.state == cloudprovider.InstanceCreating && in.errorInfo != nil {
			candidates = append(candidates, in)
		}
	}
	for _, in := range sortedInstances(g.instances) {
		if in.state == cloudprovider.InstanceCreating && in.errorInfo == nil {
			candidates = append(candidates, in)
		}
	}
	if len(candidates) < -delta {
		return fmt.Errorf("node group %s: cannot decrease target size by %d: only %d requested node(s) have not registered",
			g.spec.Name, -delta, len(candidates))
	}
	for _, in := range candidates[:-delta] {
		delete(g.instances, in.name)
	}
	return nil
}

// DeleteNodes removes the machines of the given nodes and their Node
// objects. It refuses to take the group below its minimum size.
func (g *nodeGroup) DeleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	names := make([]string, 0, len(nodes))
	g.cloud.mu.Lock()
	for _, n := range nodes {
		group, name, ok := parseProviderID(n.Spec.ProviderID)
		if !ok || group != g.spec.Name {
			g.cloud.mu.Unlock()
			return fmt.Errorf("node group %s: node %s (providerID %q) does not belong to it", g.spec.Name, n.Name, n.Spec.ProviderID)
		}
		if _, exists := g.instances[name]; !exists {
			g.cloud.mu.Unlock()
			return fmt.Errorf("node group %s: node %s has no machine", g.spec.Name, n.Name)
		}
		names = append(names, name)
	}
	if size := len(g.instances) - len(names); size < g.spec.MinSize {
		g.cloud.mu.Unlock()
		return fmt.Errorf("node group %s: deleting %d node(s) would leave %d, below min size %d", g.spec.Name, len(names), size, g.spec.MinSize)
	}
	for _, name := range names {
		g.instances[name].state = cloudprovider.InstanceDeleting
	}
	g.cloud.mu.Unlock()

	for _, name := range names {
		err := g.cloud.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			g.cloud.mu.Lock()
			g.instances[name].state = cloudprovider.InstanceRunning
			g.cloud.mu.Unlock()
			return fmt.Errorf("node group %s: delete node %s: %w", g.spec.Name, name, err)
		}
		g.cloud.mu.Lock()
		delete(g.instances, name)
		g.cloud.mu.Unlock()
	}
	return nil
}

// Nodes lists the group's machines, registered or not.
func (g *nodeGroup) Nodes() ([]cloudprovider.Instance, error) {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	out := make([]cloudprovider.Instance, 0, len(g.instances))
	for _, in := range sortedInstances(g.instances) {
		st := &cloudprovider.InstanceStatus{State: in.state}
		if in.errorInfo != nil {
			info := *in.errorInfo
			st.ErrorInfo = &info
		}
		out = append(out, cloudprovider.Instance{Id: providerID(g.spec.Name, in.name), Status: st})
	}
	return out, nil
}

// TemplateNodeInfo is the node the group would create next.
func (g *nodeGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	g.cloud.mu.Lock()
	spec := g.spec
	g.cloud.mu.Unlock()
	return &cloudprovider.NodeTemplate{Node: buildNode(spec, templateNodeName(spec.Name))}, nil
}

// GetOptions implements cloudprovider.NodeGroup; local groups have no
// per-group overrides.
func (g *nodeGroup) GetOptions(cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	return nil, cloudprovider.ErrNotImplemented
}
