package externalgrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// nodeGroup is one group of the server. Its bounds come with the
// NodeGroups answer; its template node and options are asked once.
type nodeGroup struct {
	rpc      rpc
	id       string
	min, max int

	mu       sync.Mutex
	template *corev1.Node
	options  *protos.NodeGroupAutoscalingOptions
	// noOptions records that the server has no options for the group.
	noOptions bool
}

var _ cloudprovider.NodeGroup = (*nodeGroup)(nil)

func newNodeGroup(r rpc, g *protos.NodeGroup) *nodeGroup {
	return &nodeGroup{rpc: r, id: g.GetId(), min: int(g.GetMinSize()), max: int(g.GetMaxSize())}
}

func (g *nodeGroup) Id() string   { return g.id }
func (g *nodeGroup) MinSize() int { return g.min }
func (g *nodeGroup) MaxSize() int { return g.max }

// TargetSize implements cloudprovider.NodeGroup.
func (g *nodeGroup) TargetSize() (int, error) {
	resp, err := call(g.rpc, "NodeGroupTargetSize", g.id, func(ctx context.Context) (*protos.NodeGroupTargetSizeResponse, error) {
		return g.rpc.client.NodeGroupTargetSize(ctx, &protos.NodeGroupTargetSizeRequest{Id: g.id})
	})
	if err != nil {
		return 0, err
	}
	return int(resp.GetTargetSize()), nil
}

// IncreaseSize implements cloudprovider.NodeGroup.
func (g *nodeGroup) IncreaseSize(ctx context.Context, delta int) error {
	_, err := callIn(ctx, g.rpc, "NodeGroupIncreaseSize", g.id, func(ctx context.Context) (*protos.NodeGroupIncreaseSizeResponse, error) {
		return g.rpc.client.NodeGroupIncreaseSize(ctx, &protos.NodeGroupIncreaseSizeRequest{Id: g.id, Delta: int32(delta)})
	})
	return err
}

// DecreaseTargetSize implements cloudprovider.NodeGroup.
func (g *nodeGroup) DecreaseTargetSize(ctx context.Context, delta int) error {
	_, err := callIn(ctx, g.rpc, "NodeGroupDecreaseTargetSize", g.id, func(ctx context.Context) (*protos.NodeGroupDecreaseTargetSizeResponse, error) {
		return g.rpc.client.NodeGroupDecreaseTargetSize(ctx, &protos.NodeGroupDecreaseTargetSizeRequest{Id: g.id, Delta: int32(delta)})
	})
	return err
}

// DeleteNodes implements cloudprovider.NodeGroup.
func (g *nodeGroup) DeleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	req := &protos.NodeGroupDeleteNodesRequest{Id: g.id}
	for _, n := range nodes {
		req.Nodes = append(req.Nodes, NodeToProto(n))
	}
	_, err := callIn(ctx, g.rpc, "NodeGroupDeleteNodes", g.id, func(ctx context.Context) (*protos.NodeGroupDeleteNodesResponse, error) {
		return g.rpc.client.NodeGroupDeleteNodes(ctx, req)
	})
	return err
}

// Nodes implements cloudprovider.NodeGroup.
func (g *nodeGroup) Nodes() ([]cloudprovider.Instance, error) {
	resp, err := call(g.rpc, "NodeGroupNodes", g.id, func(ctx context.Context) (*protos.NodeGroupNodesResponse, error) {
		return g.rpc.client.NodeGroupNodes(ctx, &protos.NodeGroupNodesRequest{Id: g.id})
	})
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.Instance, 0, len(resp.GetInstances()))
	for _, in := range resp.GetInstances() {
		out = append(out, InstanceFromProto(in))
	}
	return out, nil
}

// TemplateNodeInfo implements cloudprovider.NodeGroup with the node the
// server describes (its protobuf encoding); the protocol carries no pods.
// A server that sends no node gives an error, not an empty template.
func (g *nodeGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.template == nil {
		node, err := g.fetchTemplate(ctx)
		if err != nil {
			return nil, err
		}
		g.template = node
	}
	return &cloudprovider.NodeTemplate{Node: g.template.DeepCopy()}, nil
}

func (g *nodeGroup) fetchTemplate(ctx context.Context) (*corev1.Node, error) {
	resp, err := callIn(ctx, g.rpc, "NodeGroupTemplateNodeInfo", g.id, func(ctx context.Context) (*protos.NodeGroupTemplateNodeInfoResponse, error) {
		return g.rpc.client.NodeGroupTemplateNodeInfo(ctx, &protos.NodeGroupTemplateNodeInfoRequest{Id: g.id})
	})
	if err != nil {
		return nil, err
	}
	if len(resp.GetNodeBytes()) == 0 {
		return nil, fmt.Errorf("externalgrpc NodeGroupTemplateNodeInfo (node group %s): the server sent no node", g.id)
	}
	if err := checkNodeQuantities(resp.GetNodeBytes()); err != nil {
		return nil, fmt.Errorf("externalgrpc NodeGroupTemplateNodeInfo (node group %s): node not read: %w", g.id, err)
	}
	node := &corev1.Node{}
	if err := node.Unmarshal(resp.GetNodeBytes()); err != nil {
		return nil, fmt.Errorf("externalgrpc NodeGroupTemplateNodeInfo (node group %s): decode node: %w", g.id, err)
	}
	return node, nil
}

// GetOptions implements cloudprovider.NodeGroup: the server's options for
// the group, or ErrNotImplemented when it has none to give.
func (g *nodeGroup) GetOptions(defaults cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.noOptions {
		return nil, fmt.Errorf("externalgrpc NodeGroupGetOptions (node group %s): %w", g.id, cloudprovider.ErrNotImplemented)
	}
	if g.options == nil {
		resp, err := call(g.rpc, "NodeGroupGetOptions", g.id, func(ctx context.Context) (*protos.NodeGroupAutoscalingOptionsResponse, error) {
			return g.rpc.client.NodeGroupGetOptions(ctx, &protos.NodeGroupAutoscalingOptionsRequest{Id: g.id, Defaults: OptionsToProto(defaults)})
		})
		if err != nil {
			g.noOptions = errors.Is(err, cloudprovider.ErrNotImplemented)
			return nil, err
		}
		if resp.GetNodeGroupAutoscalingOptions() == nil {
			return nil, fmt.Errorf("externalgrpc NodeGroupGetOptions (node group %s): the server sent no options", g.id)
		}
		g.options = resp.GetNodeGroupAutoscalingOptions()
	}
	opts, err := OptionsFromProto(g.options, defaults)
	if err != nil {
		return nil, fmt.Errorf("externalgrpc NodeGroupGetOptions (node group %s): %w", g.id, err)
	}
	return opts, nil
}
