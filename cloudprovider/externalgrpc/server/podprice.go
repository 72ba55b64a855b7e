package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// NodeLookup finds a Node by name, for the price of a pod bound to it.
type NodeLookup func(ctx context.Context, name string) (*corev1.Node, error)

// Option configures a Server.
type Option func(*Server)

// WithNodeLookup prices a bound pod by the node it runs on. Without it a
// bound pod is priced as an unbound one.
func WithNodeLookup(lookup NodeLookup) Option { return func(s *Server) { s.nodes = lookup } }

// PricingPodPrice implements protos.CloudProviderServer. A pod costs its
// share of a node's price: the mean of its part of the node's allocatable
// CPU and of its allocatable memory, times the node's price over the
// period. A pod bound to a node (with WithNodeLookup) is priced by that
// node. Any other pod, such as the pending pods Cluster Autoscaler's price
// expander asks about, is priced by the reference node: of the node groups'
// template nodes, the one where that share costs least. The reference does
// not depend on the option being scored, so the same pod costs the same in
// every option, as with Cluster Autoscaler's own price models, which price
// a pod by CPU and memory alone.
func (s *Server) PricingPodPrice(ctx context.Context, req *protos.PricingPodPriceRequest) (*protos.PricingPodPriceResponse, error) {
	model, err := s.cloud.Pricing()
	if err != nil {
		return nil, answer(err)
	}
	pod := &corev1.Pod{}
	if err := pod.Unmarshal(req.GetPodBytes()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decode pod: %v", err)
	}
	start, end := req.GetStartTimestamp().AsTime(), req.GetEndTimestamp().AsTime()
	var price float64
	if node, err := s.boundNode(ctx, pod); err != nil {
		return nil, err
	} else if node != nil {
		price, err = podPriceOn(model, pod, node, start, end)
		if err != nil {
			return nil, answer(fmt.Errorf("pod %s/%s on node %s: %w", pod.Namespace, pod.Name, node.Name, err))
		}
	} else if price, err = s.referencePodPrice(ctx, model, pod, start, end); err != nil {
		return nil, answer(fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
	}
	return &protos.PricingPodPriceResponse{Price: price}, nil
}

// boundNode is the node pod is bound to, or nil when it is not bound or
// the server has no NodeLookup.
func (s *Server) boundNode(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	if pod.Spec.NodeName == "" || s.nodes == nil {
		return nil, nil
	}
	node, err := s.nodes(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "pod %s/%s: read its node %s: %v", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
	}
	return node, nil
}

// referencePodPrice is pod's price on the group template where it costs
// least. Groups without a template or a price are passed over; with none
// left the price is an error, never a guess.
func (s *Server) referencePodPrice(ctx context.Context, model cloudprovider.PricingModel, pod *corev1.Pod, start, end time.Time) (float64, error) {
	best, found := math.Inf(1), false
	var errs []error
	for _, g := range s.cloud.NodeGroups() {
		t, err := g.TemplateNodeInfo(ctx)
		if err == nil && (t == nil || t.Node == nil) {
			err = errors.New("no template node")
		}
		var p float64
		if err == nil {
			p, err = podPriceOn(model, pod, t.Node, start, end)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("node group %s: %w", g.Id(), err))
			continue
		}
		best, found = min(best, p), true
	}
	if !found {
		return 0, fmt.Errorf("no node group has a priced template node to price it by: %w", errors.Join(errs...))
	}
	return best, nil
}

// podPriceOn is pod's share of node's price from start to end.
func podPriceOn(model cloudprovider.PricingModel, pod *corev1.Pod, node *corev1.Node, start, end time.Time) (float64, error) {
	nodePrice, err := model.NodePrice(node, start, end)
	if err != nil {
		return 0, err
	}
	share, err := podShare(pod, node)
	if err != nil {
		return 0, err
	}
	return nodePrice * share, nil
}

// podShare is the mean of pod's parts of node's allocatable CPU and
// memory (capacity where allocatable is not set).
func podShare(pod *corev1.Pod, node *corev1.Node) (float64, error) {
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		alloc = node.Status.Capacity
	}
	cpu, mem := alloc.Cpu().MilliValue(), alloc.Memory().Value()
	if cpu <= 0 || mem <= 0 {
		return 0, fmt.Errorf("node %s has no allocatable CPU or memory to share", node.Name)
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return (float64(req.Cpu().MilliValue())/float64(cpu) + float64(req.Memory().Value())/float64(mem)) / 2, nil
}
