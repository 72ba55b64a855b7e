package externalgrpc

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// The names and numbers a Cluster Autoscaler server relies on: a change to
// the .proto that moves one breaks the wire protocol.
func TestProtocolNamesAndNumbers(t *testing.T) {
	if got, want := protos.CloudProvider_ServiceDesc.ServiceName, "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"; got != want {
		t.Errorf("service %q, want %q", got, want)
	}
	if n := len(protos.CloudProvider_ServiceDesc.Methods); n != 15 {
		t.Errorf("%d methods, want the protocol's 15", n)
	}
	for _, tc := range []struct {
		msg    protoreflect.ProtoMessage
		field  protoreflect.Name
		number protoreflect.FieldNumber
	}{
		{&protos.NodeGroupTemplateNodeInfoResponse{}, "nodeBytes", 2},
		{&protos.PricingPodPriceRequest{}, "pod_bytes", 4},
		{&protos.PricingNodePriceRequest{}, "startTimestamp", 4},
		{&protos.NodeGroupIncreaseSizeRequest{}, "id", 2},
		{&protos.NodeGroupAutoscalingOptions{}, "MaxNodeProvisionDuration", 10},
		{&protos.NodeGroupAutoscalingOptions{}, "zeroOrMaxNodeScaling", 6},
	} {
		desc := tc.msg.ProtoReflect().Descriptor()
		f := desc.Fields().ByName(tc.field)
		if f == nil || f.Number() != tc.number {
			t.Errorf("%s.%s: %v, want field number %d", desc.FullName(), tc.field, f, tc.number)
		}
	}
}
