package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
	corev1 "k8s.io/api/core/v1"
)

// NodeGroupTargetSize implements protos.CloudProviderServer.
func (s *Server) NodeGroupTargetSize(_ context.Context, req *protos.NodeGroupTargetSizeRequest) (*protos.NodeGroupTargetSizeResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	size, err := g.TargetSize()
	if err != nil {
		return nil, answer(err)
	}
	return &protos.NodeGroupTargetSizeResponse{TargetSize: int32(size)}, nil
}

// NodeGroupIncreaseSize implements protos.CloudProviderServer.
func (s *Server) NodeGroupIncreaseSize(ctx context.Context, req *protos.NodeGroupIncreaseSizeRequest) (*protos.NodeGroupIncreaseSizeResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	if err := g.IncreaseSize(ctx, int(req.GetDelta())); err != nil {
		return nil, answer(err)
	}
	return &protos.NodeGroupIncreaseSizeResponse{}, nil
}

// NodeGroupDeleteNodes implements protos.CloudProviderServer. The nodes
// carry what the protocol sends of them (name, providerID, labels,
// annotations).
func (s *Server) NodeGroupDeleteNodes(ctx context.Context, req *protos.NodeGroupDeleteNodesRequest) (*protos.NodeGroupDeleteNodesResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	nodes := make([]*corev1.Node, 0, len(req.GetNodes()))
	for _, n := range req.GetNodes() {
		nodes = append(nodes, externalgrpc.NodeFromProto(n))
	}
	if err := g.DeleteNodes(ctx, nodes); err != nil {
		return nil, answer(err)
	}
	return &protos.NodeGroupDeleteNodesResponse{}, nil
}

// NodeGroupDecreaseTargetSize implements protos.CloudProviderServer.
func (s *Server) NodeGroupDecreaseTargetSize(ctx context.Context, req *protos.NodeGroupDecreaseTargetSizeRequest) (*protos.NodeGroupDecreaseTargetSizeResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	if err := g.DecreaseTargetSize(ctx, int(req.GetDelta())); err != nil {
		return nil, answer(err)
	}
	return &protos.NodeGroupDecreaseTargetSizeResponse{}, nil
}

// NodeGroupNodes implements protos.CloudProviderServer.
func (s *Server) NodeGroupNodes(_ context.Context, req *protos.NodeGroupNodesRequest) (*protos.NodeGroupNodesResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	instances, err := g.Nodes()
	if err != nil {
		return nil, answer(err)
	}
	resp := &protos.NodeGroupNodesResponse{}
	for _, in := range instances {
		resp.Instances = append(resp.Instances, externalgrpc.InstanceToProto(in))
	}
	return resp, nil
}

// NodeGroupTemplateNodeInfo implements protos.CloudProviderServer with the
// template's node; its pods have no place in the protocol.
func (s *Server) NodeGroupTemplateNodeInfo(ctx context.Context, req *protos.NodeGroupTemplateNodeInfoRequest) (*protos.NodeGroupTemplateNodeInfoResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	t, err := g.TemplateNodeInfo(ctx)
	if err != nil {
		return nil, answer(err)
	}
	if t == nil || t.Node == nil {
		return nil, status.Errorf(codes.Internal, "node group %s: the provider gave no template node", g.Id())
	}
	b, err := t.Node.Marshal()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "node group %s: encode template node: %v", g.Id(), err)
	}
	return &protos.NodeGroupTemplateNodeInfoResponse{NodeBytes: b}, nil
}

// NodeGroupGetOptions implements protos.CloudProviderServer.
func (s *Server) NodeGroupGetOptions(_ context.Context, req *protos.NodeGroupAutoscalingOptionsRequest) (*protos.NodeGroupAutoscalingOptionsResponse, error) {
	g, err := s.group(req.GetId())
	if err != nil {
		return nil, err
	}
	defaults, err := externalgrpc.OptionsFromProto(req.GetDefaults(), cloudprovider.NodeGroupAutoscalingOptions{})
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "defaults: %v", err)
	}
	opts, err := g.GetOptions(*defaults)
	if err != nil {
		return nil, answer(err)
	}
	if opts == nil {
		return nil, status.Errorf(codes.Unimplemented, "node group %s has no options of its own", g.Id())
	}
	return &protos.NodeGroupAutoscalingOptionsResponse{NodeGroupAutoscalingOptions: externalgrpc.OptionsToProto(*opts)}, nil
}
