package snapshot

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// nodeGroup is a group of the snapshot: its nodes as they were.
type nodeGroup struct {
	spec  cloudprovider.NodeGroupSpec
	nodes []*corev1.Node
}

func (g *nodeGroup) Id() string   { return g.spec.Name }
func (g *nodeGroup) MinSize() int { return g.spec.MinSize }
func (g *nodeGroup) MaxSize() int { return g.spec.MaxSize }

// TargetSize is the number of the group's nodes in the snapshot.
func (g *nodeGroup) TargetSize() (int, error) { return len(g.nodes), nil }

func (g *nodeGroup) IncreaseSize(ctx context.Context, delta int) error {
	return fmt.Errorf("node group %s: increase size by %d: %w", g.spec.Name, delta, ErrReadOnly)
}

func (g *nodeGroup) DecreaseTargetSize(ctx context.Context, delta int) error {
	return fmt.Errorf("node group %s: decrease target size by %d: %w", g.spec.Name, -delta, ErrReadOnly)
}

func (g *nodeGroup) DeleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	return fmt.Errorf("node group %s: delete %d node(s): %w", g.spec.Name, len(nodes), ErrReadOnly)
}

// Nodes are the group's nodes, running, by their providerID.
func (g *nodeGroup) Nodes() ([]cloudprovider.Instance, error) {
	out := make([]cloudprovider.Instance, 0, len(g.nodes))
	for _, n := range g.nodes {
		out = append(out, cloudprovider.Instance{Id: n.Spec.ProviderID, Status: &cloudprovider.InstanceStatus{State: cloudprovider.InstanceRunning}})
	}
	return out, nil
}

// TemplateNodeInfo is a copy of the group's first node, as a new node
// would register: its name, providerID, taints of a node going away and
// conditions other than Ready cleared. The node loop builds templates from
// live nodes itself; this serves when it asks the provider.
func (g *nodeGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	if len(g.nodes) == 0 {
		return nil, fmt.Errorf("node group %s has no node in the snapshot to copy: %w", g.spec.Name, cloudprovider.ErrNotImplemented)
	}
	src := g.nodes[0]
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "template-" + g.spec.Name, Labels: src.Labels, Annotations: map[string]string{}},
		Spec:       corev1.NodeSpec{Taints: startTaints(src.Spec.Taints)},
		Status: corev1.NodeStatus{Capacity: src.Status.Capacity.DeepCopy(), Allocatable: src.Status.Allocatable.DeepCopy(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	return &cloudprovider.NodeTemplate{Node: n}, nil
}

// startTaints are the taints a new node of the group starts with: those of
// the node, but for the node controller's and the autoscalers' own.
func startTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		switch t.Key {
		case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
			"ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler":
			continue
		}
		out = append(out, t)
	}
	return out
}

// GetOptions: the snapshot has no per-group options.
func (g *nodeGroup) GetOptions(cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	return nil, cloudprovider.ErrNotImplemented
}
