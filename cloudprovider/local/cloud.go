// Package local is a cloud that lives in the tidal process: node groups from
// a small YAML file whose nodes are Node objects created in the API server
// after a provisioning delay. With localcluster's simulated kubelets those
// nodes become Ready and run pods. It can be told to fail or to run out of
// capacity, and reports such failures as instance error info, as a real
// cloud does.
package local

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// ProviderName is this provider's --cloud-provider value.
const ProviderName = "local"

// Cloud is the local cloud provider.
type Cloud struct {
	client kubernetes.Interface
	clock  clock.WithTicker

	mu     sync.Mutex
	groups []*nodeGroup
	// notify is told of groups whose launches failed.
	notify func(group string)
}

var (
	_ cloudprovider.CloudProvider         = (*Cloud)(nil)
	_ cloudprovider.InstanceErrorNotifier = (*Cloud)(nil)
)

// Option configures a Cloud.
type Option func(*Cloud)

// WithClock replaces the real clock, for tests that drive time.
func WithClock(c clock.WithTicker) Option { return func(cl *Cloud) { cl.clock = c } }

// New makes a cloud with cfg's groups. Call Start before use.
func New(client kubernetes.Interface, cfg *Config, opts ...Option) (*Cloud, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cloud{client: client, clock: clock.RealClock{}}
	for _, o := range opts {
		o(c)
	}
	for _, spec := range cfg.NodeGroups {
		c.groups = append(c.groups, &nodeGroup{cloud: c, spec: spec, instances: map[string]*instance{}})
	}
	return c, nil
}

// Start adopts the nodes of its groups that already exist (so a restarted
// tidal finds its machines), brings each group to its initial size, and
// launches requested nodes when their provisioning delay has passed, until
// ctx ends.
func (c *Cloud) Start(ctx context.Context) error {
	if err := c.Refresh(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	for _, g := range c.groups {
		want := g.spec.MinSize
		if g.spec.InitialSize != nil {
			want = *g.spec.InitialSize
		}
		if missing := want - len(g.instances); missing > 0 {
			g.addInstancesLocked(missing, c.clock.Now())
		}
	}
	c.mu.Unlock()
	go c.launchLoop(ctx)
	return nil
}

// launchLoop turns due instances into Node objects or into errors.
func (c *Cloud) launchLoop(ctx context.Context) {
	ticker := c.clock.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		c.launchDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

func (c *Cloud) launchDue(ctx context.Context) {
	now := c.clock.Now()
	var due []*corev1.Node
	failed := map[string]bool{}
	c.mu.Lock()
	for _, g := range c.groups {
		for _, in := range g.instances {
			if in.state != cloudprovider.InstanceCreating || in.errorInfo != nil || now.Before(in.readyAt) {
				continue
			}
			if info := in.fault.errorInfo(g.spec.Name); info != nil {
				in.errorInfo = info
				failed[g.spec.Name] = true
				continue
			}
			in.state = cloudprovider.InstanceRunning
			due = append(due, buildNode(g.spec, in.name))
		}
	}
	c.mu.Unlock()
	for _, n := range due {
		_, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			klog.FromContext(ctx).Error(err, "Local cloud could not create node", "node", n.Name)
			if group := c.markLaunchFailed(n.Name, err); group != "" {
				failed[group] = true
			}
		}
	}
	c.report(failed)
}

// markLaunchFailed records that the node of an instance could not be
// made, and returns the instance's group.
func (c *Cloud) markLaunchFailed(name string, err error) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		if in, ok := g.instances[name]; ok {
			in.state = cloudprovider.InstanceCreating
			in.errorInfo = &cloudprovider.InstanceErrorInfo{
				ErrorClass: cloudprovider.OtherErrorClass, ErrorCode: "NodeCreateFailed", ErrorMessage: err.Error(),
			}
			return g.spec.Name
		}
	}
	return ""
}

// NotifyInstanceErrors implements cloudprovider.InstanceErrorNotifier:
// the launch loop tells notify of each group whose launches just failed.
func (c *Cloud) NotifyInstanceErrors(notify func(group string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notify = notify
}

// report tells the registered function of groups whose launches failed,
// in name order, outside the lock.
func (c *Cloud) report(failed map[string]bool) {
	if len(failed) == 0 {
		return
	}
	c.mu.Lock()
	notify := c.notify
	c.mu.Unlock()
	if notify == nil {
		return
	}
	for _, group := range slices.Sorted(maps.Keys(failed)) {
		notify(group)
	}
}

// SetFault makes future launches of group fail (or succeed again with
// NoFault). Instances already requested keep the fault they were made with.
func (c *Cloud) SetFault(group string, f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupLocked(group)
	if g == nil {
		return fmt.Errorf("local cloud has no node group %q", group)
	}
	g.spec.Fault = f
	return nil
}

// Name implements cloudprovider.CloudProvider.
func (c *Cloud) Name() string { return ProviderName }

// NodeGroups implements cloudprovider.CloudProvider.
func (c *Cloud) NodeGroups() []cloudprovider.NodeGroup {
	out := make([]cloudprovider.NodeGroup, len(c.groups))
	for i, g := range c.groups {
		out[i] = g
	}
	return out
}

// NodeGroupForNode implements cloudprovider.CloudProvider.
func (c *Cloud) NodeGroupForNode(node *corev1.Node) (cloudprovider.NodeGroup, error) {
	group, _, ok := parseProviderID(node.Spec.ProviderID)
	if !ok {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groupLocked(group); g != nil {
		return g, nil
	}
	return nil, nil
}

// Pricing implements cloudprovider.CloudProvider.
func (c *Cloud) Pricing() (cloudprovider.PricingModel, error) { return pricing{cloud: c}, nil }

// GPULabel implements cloudprovider.CloudProvider.
func (c *Cloud) GPULabel() string { return "local.tidal.dev/gpu" }

// Cleanup implements cloudprovider.CloudProvider.
func (c *Cloud) Cleanup() error { return nil }

// Refresh reconciles the cloud's machines with the Node objects: a Node of
// one of its groups that it does not know is adopted, and a registered
// machine whose Node was deleted is gone.
func (c *Cloud) Refresh(ctx context.Context) error {
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("local cloud: list nodes: %w", err)
	}
	present := map[string]bool{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		group, name, ok := parseProviderID(n.Spec.ProviderID)
		if !ok || name != n.Name {
			continue
		}
		present[name] = true
		if g := c.groupLocked(group); g != nil {
			g.adoptLocked(name)
		}
	}
	for _, g := range c.groups {
		for name, in := range g.instances {
			if in.state == cloudprovider.InstanceRunning && !present[name] && in.registered {
				delete(g.instances, name)
			}
			if present[name] {
				in.registered = true
			}
		}
	}
	return nil
}

func (c *Cloud) groupLocked(name string) *nodeGroup {
	for _, g := range c.groups {
		if g.spec.Name == name {
			return g
		}
	}
	return nil
}

// sortedInstances lists a group's instances by name.
func sortedInstances(m map[string]*instance) []*instance {
	out := make([]*instance, 0, len(m))
	for _, in := range m {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// BalancingIgnoredLabels implements cloudprovider.BalancingLabelIgnorer: the
// group name label differs between groups alike.
func (c *Cloud) BalancingIgnoredLabels() []string { return []string{NodeGroupLabel} }

var _ cloudprovider.BalancingLabelIgnorer = (*Cloud)(nil)
