package externalgrpc

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

func TestOptionsRoundTrip(t *testing.T) {
	in := cloudprovider.NodeGroupAutoscalingOptions{
		ScaleDownUtilizationThreshold: 0.4, ScaleDownGpuUtilizationThreshold: 0.6, ScaleDownUnneededTime: 3 * time.Minute,
		ScaleDownUnreadyTime: 20 * time.Minute, MaxNodeProvisionTime: 7 * time.Minute, IgnoreDaemonSetsUtilization: true,
	}
	out, err := OptionsFromProto(OptionsToProto(in), cloudprovider.NodeGroupAutoscalingOptions{})
	if err != nil || !reflect.DeepEqual(*out, in) {
		t.Fatalf("round trip of %+v = %+v, %v", in, out, err)
	}
	defaults := cloudprovider.NodeGroupAutoscalingOptions{ScaleDownUnneededTime: time.Minute}
	out, err = OptionsFromProto(&protos.NodeGroupAutoscalingOptions{ScaleDownUtilizationThreshold: 0.3}, defaults)
	if err != nil || out.ScaleDownUnneededTime != time.Minute || out.ScaleDownUtilizationThreshold != 0.3 {
		t.Errorf("a message without durations = %+v, %v; want the default unneeded time and threshold 0.3", out, err)
	}
	bad := &protos.NodeGroupAutoscalingOptions{ScaleDownUnreadyDuration: &durationpb.Duration{Seconds: 1, Nanos: -1}}
	if _, err := OptionsFromProto(bad, defaults); err == nil || !strings.Contains(err.Error(), "scaleDownUnreadyDuration") {
		t.Errorf("an invalid duration = %v, want an error naming scaleDownUnreadyDuration", err)
	}
}

func TestInstanceRoundTrip(t *testing.T) {
	for _, in := range []cloudprovider.Instance{
		{Id: "p://a"},
		{Id: "p://b", Status: &cloudprovider.InstanceStatus{State: cloudprovider.InstanceDeleting}},
		{Id: "p://c", Status: &cloudprovider.InstanceStatus{State: cloudprovider.InstanceCreating, ErrorInfo: &cloudprovider.InstanceErrorInfo{
			ErrorClass: cloudprovider.OtherErrorClass, ErrorCode: "Quota", ErrorMessage: "over quota"}}},
	} {
		if out := InstanceFromProto(InstanceToProto(in)); !reflect.DeepEqual(out, in) {
			t.Errorf("round trip of %+v = %+v", in, out)
		}
	}
}
