// Package server serves any tidal cloud provider over Cluster Autoscaler's
// externalgrpc protocol, so that tidal (or Cluster Autoscaler) reaches it
// with --cloud-provider=externalgrpc. Methods the provider does not offer
// (cloudprovider.ErrNotImplemented) answer Unimplemented, as the protocol
// asks of optional methods.
package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// Server answers the protocol's calls with a provider's.
type Server struct {
	protos.UnimplementedCloudProviderServer
	cloud cloudprovider.CloudProvider
	nodes NodeLookup
}

var _ protos.CloudProviderServer = (*Server)(nil)

// New serves cloud.
func New(cloud cloudprovider.CloudProvider, opts ...Option) *Server {
	s := &Server{cloud: cloud}
	for _, o := range opts {
		o(s)
	}
	return s
}

// answer turns a provider error into a status: Unimplemented for what the
// provider does not offer, Unknown with the message for the rest.
func answer(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, cloudprovider.ErrNotImplemented) {
		return status.Error(codes.Unimplemented, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

// group finds a node group by id.
func (s *Server) group(id string) (cloudprovider.NodeGroup, error) {
	for _, g := range s.cloud.NodeGroups() {
		if g.Id() == id {
			return g, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "no node group %q", id)
}

func groupToProto(g cloudprovider.NodeGroup) *protos.NodeGroup {
	return &protos.NodeGroup{Id: g.Id(), MinSize: int32(g.MinSize()), MaxSize: int32(g.MaxSize()),
		Debug: fmt.Sprintf("%s (min %d, max %d)", g.Id(), g.MinSize(), g.MaxSize())}
}

// NodeGroups implements protos.CloudProviderServer.
func (s *Server) NodeGroups(context.Context, *protos.NodeGroupsRequest) (*protos.NodeGroupsResponse, error) {
	resp := &protos.NodeGroupsResponse{}
	for _, g := range s.cloud.NodeGroups() {
		resp.NodeGroups = append(resp.NodeGroups, groupToProto(g))
	}
	return resp, nil
}

// NodeGroupForNode implements protos.CloudProviderServer; a node of no
// group gets a group with an empty id.
func (s *Server) NodeGroupForNode(_ context.Context, req *protos.NodeGroupForNodeRequest) (*protos.NodeGroupForNodeResponse, error) {
	g, err := s.cloud.NodeGroupForNode(externalgrpc.NodeFromProto(req.GetNode()))
	if err != nil {
		return nil, answer(err)
	}
	if g == nil {
		return &protos.NodeGroupForNodeResponse{NodeGroup: &protos.NodeGroup{}}, nil
	}
	return &protos.NodeGroupForNodeResponse{NodeGroup: groupToProto(g)}, nil
}

// PricingNodePrice implements protos.CloudProviderServer.
func (s *Server) PricingNodePrice(_ context.Context, req *protos.PricingNodePriceRequest) (*protos.PricingNodePriceResponse, error) {
	model, err := s.cloud.Pricing()
	if err != nil {
		return nil, answer(err)
	}
	price, err := model.NodePrice(externalgrpc.NodeFromProto(req.GetNode()),
		req.GetStartTimestamp().AsTime(), req.GetEndTimestamp().AsTime())
	if err != nil {
		return nil, answer(err)
	}
	return &protos.PricingNodePriceResponse{Price: price}, nil
}

// GPULabel implements protos.CloudProviderServer.
func (s *Server) GPULabel(context.Context, *protos.GPULabelRequest) (*protos.GPULabelResponse, error) {
	return &protos.GPULabelResponse{Label: s.cloud.GPULabel()}, nil
}

// GetAvailableGPUTypes implements protos.CloudProviderServer: tidal's
// providers list no GPU types, so the map is empty.
func (s *Server) GetAvailableGPUTypes(context.Context, *protos.GetAvailableGPUTypesRequest) (*protos.GetAvailableGPUTypesResponse, error) {
	return &protos.GetAvailableGPUTypesResponse{GpuTypes: map[string]*anypb.Any{}}, nil
}

// Cleanup implements protos.CloudProviderServer.
func (s *Server) Cleanup(context.Context, *protos.CleanupRequest) (*protos.CleanupResponse, error) {
	return &protos.CleanupResponse{}, answer(s.cloud.Cleanup())
}

// Refresh implements protos.CloudProviderServer.
func (s *Server) Refresh(ctx context.Context, _ *protos.RefreshRequest) (*protos.RefreshResponse, error) {
	if err := s.cloud.Refresh(ctx); err != nil {
		return nil, answer(err)
	}
	return &protos.RefreshResponse{}, nil
}
