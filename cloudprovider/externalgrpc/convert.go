package externalgrpc

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// The conversions between tidal's provider types and the protocol's, used
// by the client and the server alike.

// NodeToProto is the part of a Node the protocol carries.
func NodeToProto(n *corev1.Node) *protos.ExternalGrpcNode {
	return &protos.ExternalGrpcNode{
		ProviderID: n.Spec.ProviderID, Name: n.Name, Labels: n.Labels, Annotations: n.Annotations,
	}
}

// NodeFromProto is a Node with what the protocol carries of it.
func NodeFromProto(p *protos.ExternalGrpcNode) *corev1.Node {
	n := &corev1.Node{}
	n.Name = p.GetName()
	n.Labels = p.GetLabels()
	n.Annotations = p.GetAnnotations()
	n.Spec.ProviderID = p.GetProviderID()
	return n
}

// InstanceToProto encodes one instance.
func InstanceToProto(in cloudprovider.Instance) *protos.Instance {
	out := &protos.Instance{Id: in.Id}
	if in.Status == nil {
		return out
	}
	out.Status = &protos.InstanceStatus{InstanceState: stateToProto(in.Status.State)}
	if e := in.Status.ErrorInfo; e != nil {
		out.Status.ErrorInfo = &protos.InstanceErrorInfo{
			ErrorCode: e.ErrorCode, ErrorMessage: e.ErrorMessage, InstanceErrorClass: int32(e.ErrorClass),
		}
	}
	return out
}

// InstanceFromProto decodes one instance; an unspecified state is no
// status and an empty error code no error, as the protocol says.
func InstanceFromProto(p *protos.Instance) cloudprovider.Instance {
	out := cloudprovider.Instance{Id: p.GetId()}
	st := p.GetStatus()
	if st == nil || st.GetInstanceState() == protos.InstanceStatus_unspecified {
		return out
	}
	out.Status = &cloudprovider.InstanceStatus{State: stateFromProto(st.GetInstanceState())}
	if e := st.GetErrorInfo(); e.GetErrorCode() != "" {
		out.Status.ErrorInfo = &cloudprovider.InstanceErrorInfo{
			ErrorClass: cloudprovider.InstanceErrorClass(e.GetInstanceErrorClass()),
			ErrorCode:  e.GetErrorCode(), ErrorMessage: e.GetErrorMessage(),
		}
	}
	return out
}

// states pairs tidal's instance states with the protocol's.
var states = [...]struct {
	tidal cloudprovider.InstanceState
	proto protos.InstanceStatus_InstanceState
}{
	{cloudprovider.InstanceRunning, protos.InstanceStatus_instanceRunning},
	{cloudprovider.InstanceCreating, protos.InstanceStatus_instanceCreating},
	{cloudprovider.InstanceDeleting, protos.InstanceStatus_instanceDeleting},
}

func stateToProto(s cloudprovider.InstanceState) protos.InstanceStatus_InstanceState {
	for _, p := range states {
		if p.tidal == s {
			return p.proto
		}
	}
	return protos.InstanceStatus_unspecified
}

func stateFromProto(s protos.InstanceStatus_InstanceState) cloudprovider.InstanceState {
	for _, p := range states {
		if p.proto == s {
			return p.tidal
		}
	}
	return 0
}

// OptionsToProto encodes a group's autoscaling options.
func OptionsToProto(o cloudprovider.NodeGroupAutoscalingOptions) *protos.NodeGroupAutoscalingOptions {
	return &protos.NodeGroupAutoscalingOptions{
		ScaleDownUtilizationThreshold:    o.ScaleDownUtilizationThreshold,
		ScaleDownGpuUtilizationThreshold: o.ScaleDownGpuUtilizationThreshold,
		IgnoreDaemonSetsUtilization:      o.IgnoreDaemonSetsUtilization,
		ScaleDownUnneededDuration:        durationpb.New(o.ScaleDownUnneededTime),
		ScaleDownUnreadyDuration:         durationpb.New(o.ScaleDownUnreadyTime),
		MaxNodeProvisionDuration:         durationpb.New(o.MaxNodeProvisionTime),
	}
}

// OptionsFromProto decodes a group's autoscaling options; a duration the
// message leaves out keeps its default.
func OptionsFromProto(p *protos.NodeGroupAutoscalingOptions, defaults cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	out := defaults
	out.ScaleDownUtilizationThreshold = p.GetScaleDownUtilizationThreshold()
	out.ScaleDownGpuUtilizationThreshold = p.GetScaleDownGpuUtilizationThreshold()
	out.IgnoreDaemonSetsUtilization = p.GetIgnoreDaemonSetsUtilization()
	for _, d := range []struct {
		name string
		in   *durationpb.Duration
		out  *time.Duration
	}{
		{"scaleDownUnneededDuration", p.GetScaleDownUnneededDuration(), &out.ScaleDownUnneededTime},
		{"scaleDownUnreadyDuration", p.GetScaleDownUnreadyDuration(), &out.ScaleDownUnreadyTime},
		{"MaxNodeProvisionDuration", p.GetMaxNodeProvisionDuration(), &out.MaxNodeProvisionTime},
	} {
		if d.in == nil {
			continue
		}
		if err := d.in.CheckValid(); err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		*d.out = d.in.AsDuration()
	}
	return &out, nil
}
