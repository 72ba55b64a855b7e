package server_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/server"
)

// oneGroup is a provider of one group "g" whose calls fail with err.
type oneGroup struct{ err error }

func (c oneGroup) Name() string                          { return "one" }
func (c oneGroup) NodeGroups() []cloudprovider.NodeGroup { return []cloudprovider.NodeGroup{group(c)} }
func (c oneGroup) NodeGroupForNode(*corev1.Node) (cloudprovider.NodeGroup, error) {
	return nil, nil
}
func (c oneGroup) Pricing() (cloudprovider.PricingModel, error) { return nil, c.err }
func (c oneGroup) GPULabel() string                             { return "" }
func (c oneGroup) Refresh(ctx context.Context) error            { return c.err }
func (c oneGroup) Cleanup() error                               { return nil }

type group oneGroup

func (g group) Id() string                                        { return "g" }
func (g group) MinSize() int                                      { return 0 }
func (g group) MaxSize() int                                      { return 3 }
func (g group) TargetSize() (int, error)                          { return 1, g.err }
func (g group) IncreaseSize(context.Context, int) error           { return g.err }
func (g group) DecreaseTargetSize(context.Context, int) error     { return g.err }
func (g group) DeleteNodes(context.Context, []*corev1.Node) error { return g.err }
func (g group) Nodes() ([]cloudprovider.Instance, error)          { return nil, g.err }
func (g group) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	return nil, g.err
}
func (g group) GetOptions(cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	return nil, g.err
}

func TestServerStatusCodes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  error
		id   string
		want codes.Code
	}{
		{"not offered", cloudprovider.ErrNotImplemented, "g", codes.Unimplemented},
		{"wrapped not offered", errors.Join(errors.New("group g"), cloudprovider.ErrNotImplemented), "g", codes.Unimplemented},
		{"failed", errors.New("cloud API down"), "g", codes.Unknown},
		{"unknown group", nil, "nope", codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := server.New(oneGroup{err: tc.err})
			_, err := s.NodeGroupTemplateNodeInfo(ctx, &protos.NodeGroupTemplateNodeInfoRequest{Id: tc.id})
			if status.Code(err) != tc.want {
				t.Errorf("NodeGroupTemplateNodeInfo: %v, want code %v", err, tc.want)
			}
			_, err = s.NodeGroupIncreaseSize(ctx, &protos.NodeGroupIncreaseSizeRequest{Id: tc.id, Delta: 1})
			if status.Code(err) != tc.want {
				t.Errorf("NodeGroupIncreaseSize: %v, want code %v", err, tc.want)
			}
		})
	}
	s := server.New(oneGroup{})
	if _, err := s.NodeGroupGetOptions(ctx, &protos.NodeGroupAutoscalingOptionsRequest{Id: "g"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("NodeGroupGetOptions of a group with no options of its own: %v, want Unimplemented", err)
	}
	if _, err := s.NodeGroupTemplateNodeInfo(ctx, &protos.NodeGroupTemplateNodeInfoRequest{Id: "g"}); status.Code(err) != codes.Internal {
		t.Errorf("NodeGroupTemplateNodeInfo with no node: %v, want Internal", err)
	}
}
