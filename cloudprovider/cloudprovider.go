// Package cloudprovider defines how tidal talks to the infrastructure that owns
// the nodes: a CloudProvider lists NodeGroups, and each NodeGroup can grow,
// shrink and describe the node it would create.
//
// The method set and meaning follow Cluster Autoscaler's cloudprovider
// package, so that a provider written for one maps onto the other without
// surprises. Implementations live in sub-packages (local, aws, externalgrpc).
package cloudprovider

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ResourceNvidiaGPU is the extended resource of GPUs that Cluster Autoscaler
// counts, that of NVIDIA's device plugin; a node carrying its provider's
// GPULabel is expected to offer it.
const ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"

// ErrNotImplemented is returned by optional methods a provider does not offer.
var ErrNotImplemented = errors.New("not implemented")

// CloudProvider is the infrastructure that owns the node groups.
type CloudProvider interface {
	// Name is the provider's name, as given to --cloud-provider.
	Name() string
	// NodeGroups returns every group tidal may scale. The list may change
	// after Refresh.
	NodeGroups() []NodeGroup
	// NodeGroupForNode returns the group a node belongs to, or nil (and no
	// error) when the node is not managed by any group.
	NodeGroupForNode(node *corev1.Node) (NodeGroup, error)
	// Pricing returns the provider's price model, or ErrNotImplemented.
	Pricing() (PricingModel, error)
	// GPULabel is the node label that marks GPU nodes.
	GPULabel() string
	// Refresh is called at the start of every node-loop iteration, before
	// any other call, so the provider can update cached state.
	Refresh(ctx context.Context) error
	// Cleanup releases whatever the provider holds.
	Cleanup() error
}

// InstanceErrorNotifier is implemented by providers that learn of failed
// launches as they happen (an instance of a group now reports
// InstanceErrorInfo). The node loop registers a function to be told, so
// that it backs the group off and falls over to another within about a
// second, not at its next scan. It is not part of Cluster Autoscaler's
// interface; providers without it are read at every iteration only.
type InstanceErrorNotifier interface {
	// NotifyInstanceErrors sets the function called, with the group's ID,
	// each time instances of a group start reporting an error. The
	// provider calls it without holding its locks; it must return at once.
	NotifyInstanceErrors(notify func(group string))
}

// NodeGroup is a set of nodes with the same shape that grow and shrink
// together (an Auto Scaling Group, a local pool).
type NodeGroup interface {
	// Id identifies the group; it is what --nodes names and what the
	// priority expander's regular expressions match.
	Id() string
	// MinSize and MaxSize bound the group's target size.
	MinSize() int
	MaxSize() int
	// TargetSize is the size the group is asked to have. It may differ from
	// the number of registered nodes while nodes start or go.
	TargetSize() (int, error)
	// IncreaseSize asks for delta more nodes. delta must be positive and the
	// result must not exceed MaxSize.
	IncreaseSize(ctx context.Context, delta int) error
	// DecreaseTargetSize lowers the target by -delta (delta < 0) by
	// cancelling requests not yet fulfilled; it never removes running nodes.
	DecreaseTargetSize(ctx context.Context, delta int) error
	// DeleteNodes removes the given nodes and lowers the target size
	// accordingly. It refuses to go below MinSize.
	DeleteNodes(ctx context.Context, nodes []*corev1.Node) error
	// Nodes lists the group's instances, including those not yet
	// registered as Nodes, with their state and any error.
	Nodes() ([]Instance, error)
	// TemplateNodeInfo returns a node as it would look right after it
	// started, with the pods that start with it. Used to scale from zero.
	TemplateNodeInfo(ctx context.Context) (*NodeTemplate, error)
	// GetOptions returns per-group overrides of the autoscaling options, or
	// ErrNotImplemented when the group has none.
	GetOptions(defaults NodeGroupAutoscalingOptions) (*NodeGroupAutoscalingOptions, error)
}

// NodeTemplate is a node as it would be just after it started, with the pods
// that run on it from the start (static pods; DaemonSet pods are added by the
// node loop, which knows the DaemonSets).
type NodeTemplate struct {
	Node *corev1.Node
	Pods []*corev1.Pod
}

// Instance is one machine of a node group. Id is the providerID the Node
// object carries once it registers.
type Instance struct {
	Id     string
	Status *InstanceStatus
}

// InstanceState is where an instance is in its life.
type InstanceState int

const (
	// InstanceRunning means the instance is up (it may not have registered yet).
	InstanceRunning InstanceState = iota + 1
	// InstanceCreating means the instance is being created.
	InstanceCreating
	// InstanceDeleting means the instance is going away.
	InstanceDeleting
)

func (s InstanceState) String() string {
	switch s {
	case InstanceRunning:
		return "Running"
	case InstanceCreating:
		return "Creating"
	case InstanceDeleting:
		return "Deleting"
	}
	return "Unknown"
}

// InstanceStatus is an instance's state and, when creating it failed, why.
type InstanceStatus struct {
	State     InstanceState
	ErrorInfo *InstanceErrorInfo
}

// InstanceErrorClass tells capacity errors from the rest, so the node loop
// can fall over to another group at once on a stock-out.
type InstanceErrorClass int

const (
	// OutOfResourcesErrorClass means the cloud has no capacity of this kind.
	OutOfResourcesErrorClass InstanceErrorClass = 1
	// OtherErrorClass is any other failure.
	OtherErrorClass InstanceErrorClass = 99
)

// InstanceErrorInfo describes why an instance could not be created.
type InstanceErrorInfo struct {
	ErrorClass   InstanceErrorClass
	ErrorCode    string
	ErrorMessage string
}

// PricingModel prices nodes, for the price expander.
type PricingModel interface {
	// NodePrice is the cost of running node from start to end.
	NodePrice(node *corev1.Node, start, end time.Time) (float64, error)
}

// GroupPricingModel is implemented by price models that price a group's
// next node by the group, not only by the node's labels: a template node
// made from a live node carries no providerID, and only the group knows
// whether it launches spot or on-demand instances. It is not part of
// Cluster Autoscaler's interface.
type GroupPricingModel interface {
	PricingModel
	// NodeGroupPrice is the cost of running one new node of the group
	// (template is its template node) from start to end. An error means
	// the price is unknown, never that it is 0.
	NodeGroupPrice(group string, template *corev1.Node, start, end time.Time) (float64, error)
}

// GroupNodePrice is the cost of running one new node of group from start
// to end: the model's NodeGroupPrice when it has one, else NodePrice of
// the template node. Consolidation and the price expander compare groups
// with it; a group whose price is an error is never chosen for its price.
func GroupNodePrice(m PricingModel, group string, template *corev1.Node, start, end time.Time) (float64, error) {
	if g, ok := m.(GroupPricingModel); ok {
		return g.NodeGroupPrice(group, template, start, end)
	}
	return m.NodePrice(template, start, end)
}

// NodeGroupAutoscalingOptions are the options a group may override.
type NodeGroupAutoscalingOptions struct {
	ScaleDownUtilizationThreshold    float64
	ScaleDownGpuUtilizationThreshold float64
	ScaleDownUnneededTime            time.Duration
	ScaleDownUnreadyTime             time.Duration
	MaxNodeProvisionTime             time.Duration
	IgnoreDaemonSetsUtilization      bool
	// MaxNodeLifetime is how old a node of the group may get before it is
	// replaced (new capacity Ready first, then drained); 0: no limit. A
	// tidal addition.
	MaxNodeLifetime time.Duration
}

// BalancingLabelIgnorer is implemented by providers whose nodes carry labels
// that differ between node groups alike but for their name or place (a
// group name label, a zone id): --balance-similar-node-groups sets them
// aside when comparing groups, as Cluster Autoscaler's per-provider
// comparators do. It is not part of Cluster Autoscaler's interface.
type BalancingLabelIgnorer interface {
	// BalancingIgnoredLabels lists the label keys to set aside.
	BalancingIgnoredLabels() []string
}

// BalancingIgnoredLabels is the provider's labels to set aside when
// comparing groups, none when it does not say.
func BalancingIgnoredLabels(p CloudProvider) []string {
	if b, ok := p.(BalancingLabelIgnorer); ok {
		return b.BalancingIgnoredLabels()
	}
	return nil
}
