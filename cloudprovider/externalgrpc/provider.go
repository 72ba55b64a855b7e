// Package externalgrpc is the client side of Cluster Autoscaler's
// externalgrpc cloud provider protocol: tidal's node groups are those of a
// gRPC server written for Cluster Autoscaler, which it reaches with the
// address and TLS files of a --cloud-config file in Cluster Autoscaler's
// format. Package server is the other side, serving any tidal provider.
//
// As in Cluster Autoscaler, the node groups, the group of each node and
// each group's template node and options are asked once per Refresh and
// kept until the next; sizes and instances are asked at each call. Every
// call is bounded by the config's grpc_timeout. Optional methods the server
// answers with Unimplemented return cloudprovider.ErrNotImplemented.
package externalgrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// ProviderName is this provider's --cloud-provider value.
const ProviderName = "externalgrpc"

// Provider is a cloudprovider.CloudProvider served over gRPC.
type Provider struct {
	rpc  rpc
	conn *grpc.ClientConn

	mu       sync.Mutex
	groups   []cloudprovider.NodeGroup
	loaded   bool
	forNode  map[string]*nodeGroup
	gpuLabel *string
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// rpc is what every call needs: the client, the context calls derive
// from, their timeout and the log.
type rpc struct {
	client  protos.CloudProviderClient
	ctx     context.Context
	timeout time.Duration
	log     klog.Logger
}

// New connects to the server cfg names. The connection is made lazily and
// remade after a failure; calls fail until the server answers. Calls end
// with ctx.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	opts, err := cfg.DialOptions()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(cfg.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("externalgrpc: connect to %s: %w", cfg.Address, err)
	}
	p := NewWithClient(ctx, protos.NewCloudProviderClient(conn), cfg.Timeout)
	p.conn = conn
	return p, nil
}

// NewWithClient is a provider of an existing client, each call bounded by
// timeout.
func NewWithClient(ctx context.Context, client protos.CloudProviderClient, timeout time.Duration) *Provider {
	return &Provider{
		rpc:     rpc{client: client, ctx: ctx, timeout: timeout, log: klog.FromContext(ctx).WithName(ProviderName)},
		forNode: map[string]*nodeGroup{},
	}
}

// call runs one RPC with the timeout. Its error names the RPC and, when
// given, the node group; Unimplemented becomes ErrNotImplemented.
func call[T any](r rpc, name, group string, f func(context.Context) (T, error)) (T, error) {
	return callIn(r.ctx, r, name, group, f)
}

// callIn is call within ctx: the node loop's iteration, whose deadline
// ends an RPC that hangs.
func callIn[T any](ctx context.Context, r rpc, name, group string, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	r.log.V(5).Info("gRPC call", "rpc", name, "nodeGroup", group)
	out, err := f(ctx)
	if err == nil {
		return out, nil
	}
	where := "externalgrpc " + name
	if group != "" {
		where += " (node group " + group + ")"
	}
	if status.Code(err) == codes.Unimplemented {
		return out, fmt.Errorf("%s: %w", where, cloudprovider.ErrNotImplemented)
	}
	r.log.V(1).Info("gRPC call failed", "rpc", name, "nodeGroup", group, "err", err)
	return out, fmt.Errorf("%s: %w", where, err)
}

// Name implements cloudprovider.CloudProvider.
func (p *Provider) Name() string { return ProviderName }

// Refresh asks the server to refresh, drops what was kept from the last
// iteration and reads the node groups again: an iteration whose groups are
// unknown fails here rather than going on with none.
func (p *Provider) Refresh(ctx context.Context) error {
	p.mu.Lock()
	p.loaded, p.groups, p.forNode = false, nil, map[string]*nodeGroup{}
	p.mu.Unlock()
	if _, err := callIn(ctx, p.rpc, "Refresh", "", func(ctx context.Context) (*protos.RefreshResponse, error) {
		return p.rpc.client.Refresh(ctx, &protos.RefreshRequest{})
	}); err != nil {
		return err
	}
	_, err := p.nodeGroups()
	return err
}

// NodeGroups implements cloudprovider.CloudProvider: the groups read at the
// last Refresh. Before any Refresh it asks the server, and has none when
// that fails (the error is logged).
func (p *Provider) NodeGroups() []cloudprovider.NodeGroup {
	groups, err := p.nodeGroups()
	if err != nil {
		p.rpc.log.Error(err, "No node groups")
	}
	return groups
}

func (p *Provider) nodeGroups() ([]cloudprovider.NodeGroup, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded {
		return p.groups, nil
	}
	resp, err := call(p.rpc, "NodeGroups", "", func(ctx context.Context) (*protos.NodeGroupsResponse, error) {
		return p.rpc.client.NodeGroups(ctx, &protos.NodeGroupsRequest{})
	})
	if err != nil {
		return nil, err
	}
	p.groups = make([]cloudprovider.NodeGroup, 0, len(resp.GetNodeGroups()))
	for _, g := range resp.GetNodeGroups() {
		p.groups = append(p.groups, newNodeGroup(p.rpc, g))
	}
	p.loaded = true
	return p.groups, nil
}

// NodeGroupForNode implements cloudprovider.CloudProvider. Answers naming
// a group are kept until the next Refresh; a node of no group is asked
// again each time, as Cluster Autoscaler does.
func (p *Provider) NodeGroupForNode(node *corev1.Node) (cloudprovider.NodeGroup, error) {
	if node == nil {
		return nil, errors.New("externalgrpc NodeGroupForNode: no node")
	}
	// The name too: a node may not have its providerID yet.
	key := node.Name + "/" + node.Spec.ProviderID
	p.mu.Lock()
	g, ok := p.forNode[key]
	p.mu.Unlock()
	if ok {
		return g, nil
	}
	resp, err := call(p.rpc, "NodeGroupForNode", "", func(ctx context.Context) (*protos.NodeGroupForNodeResponse, error) {
		return p.rpc.client.NodeGroupForNode(ctx, &protos.NodeGroupForNodeRequest{Node: NodeToProto(node)})
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	pg := resp.GetNodeGroup()
	if pg.GetId() == "" {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g = p.knownGroupLocked(pg)
	p.forNode[key] = g
	return g, nil
}

// knownGroupLocked is the group of the last NodeGroups answer with pg's
// id, so that what it keeps is shared, or else a new one.
func (p *Provider) knownGroupLocked(pg *protos.NodeGroup) *nodeGroup {
	for _, g := range p.groups {
		if g.Id() == pg.GetId() {
			return g.(*nodeGroup)
		}
	}
	return newNodeGroup(p.rpc, pg)
}

// GPULabel implements cloudprovider.CloudProvider. The answer is kept for
// good; when the server cannot be asked the label is empty (logged) and it
// is asked again next time.
func (p *Provider) GPULabel() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gpuLabel != nil {
		return *p.gpuLabel
	}
	resp, err := call(p.rpc, "GPULabel", "", func(ctx context.Context) (*protos.GPULabelResponse, error) {
		return p.rpc.client.GPULabel(ctx, &protos.GPULabelRequest{})
	})
	if err != nil {
		p.rpc.log.Error(err, "No GPU label")
		return ""
	}
	label := resp.GetLabel()
	p.gpuLabel = &label
	return label
}

// Pricing implements cloudprovider.CloudProvider. Whether the server
// prices nodes shows at each NodePrice call.
func (p *Provider) Pricing() (cloudprovider.PricingModel, error) { return pricing{rpc: p.rpc}, nil }

// Cleanup asks the server to clean up and closes the connection.
func (p *Provider) Cleanup() error {
	_, err := call(p.rpc, "Cleanup", "", func(ctx context.Context) (*protos.CleanupResponse, error) {
		return p.rpc.client.Cleanup(ctx, &protos.CleanupRequest{})
	})
	if p.conn != nil {
		err = errors.Join(err, p.conn.Close())
	}
	return err
}

// pricing asks the server for node prices.
type pricing struct{ rpc rpc }

// NodePrice implements cloudprovider.PricingModel.
func (m pricing) NodePrice(node *corev1.Node, start, end time.Time) (float64, error) {
	resp, err := call(m.rpc, "PricingNodePrice", "", func(ctx context.Context) (*protos.PricingNodePriceResponse, error) {
		return m.rpc.client.PricingNodePrice(ctx, &protos.PricingNodePriceRequest{
			Node: NodeToProto(node), StartTimestamp: timestamppb.New(start), EndTimestamp: timestamppb.New(end),
		})
	})
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", node.Name, err)
	}
	return resp.GetPrice(), nil
}
