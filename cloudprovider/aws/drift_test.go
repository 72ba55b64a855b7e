package aws

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
)

func TestDriftOf(t *testing.T) {
	lt := func(id, version string) *astypes.LaunchTemplateSpecification {
		return &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(id), Version: aws.String(version)}
	}
	inst := func(id, typ string, spec *astypes.LaunchTemplateSpecification) astypes.Instance {
		return astypes.Instance{InstanceId: aws.String(id), InstanceType: aws.String(typ), LaunchTemplate: spec,
			LifecycleState: astypes.LifecycleStateInService}
	}
	pending := inst("i-pending", "m5.large", lt("lt-a", "1"))
	pending.LifecycleState = astypes.LifecycleStatePending
	g := &astypes.AutoScalingGroup{LaunchTemplate: lt("lt-a", "$Latest"), Instances: []astypes.Instance{
		inst("i-same", "m5.xlarge", lt("lt-a", "2")),
		inst("i-oldversion", "m5.xlarge", lt("lt-a", "1")),
		inst("i-othertemplate", "m5.xlarge", lt("lt-b", "2")),
		inst("i-othertype", "m5.large", lt("lt-a", "2")),
		inst("i-unknownversion", "m5.xlarge", lt("lt-a", "$Latest")),
		{InstanceId: aws.String("i-fromlc"), InstanceType: aws.String("m5.xlarge"), LaunchConfigurationName: aws.String("old"),
			LifecycleState: astypes.LifecycleStateInService},
		pending,
	}}
	got := driftOf(g, "2", map[string]bool{"m5.xlarge": true})
	want := map[string]string{"i-oldversion": "version 1, the group launches version 2", "i-othertemplate": "launch template lt-b",
		"i-othertype": "instance type m5.large", "i-fromlc": "launch configuration old"}
	if len(got) != len(want) {
		t.Fatalf("drift %v, want %d instances: %v", got, len(want), want)
	}
	for id, part := range want {
		if !strings.Contains(got[id], part) {
			t.Errorf("drift of %s = %q, want it to contain %q", id, got[id], part)
		}
	}
	if got := driftOf(g, "", nil); len(got) != 2 || got["i-oldversion"] != "" {
		t.Errorf("with the group's version unknown and any type allowed: %v, want only the other template and the launch configuration", got)
	}
}

// Against the emulator: a new launch template version the group launches
// ($Latest) makes its instances, launched from the old one, drifted.
func TestDriftedAfterANewLaunchTemplateVersion(t *testing.T) {
	e := newEnv(t)
	e.group("workers", 0, 5, 2, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	if d := c.Drifted(); len(d) != 0 {
		t.Fatalf("drifted %v before any change", d)
	}
	if _, err := e.srv.AddLaunchTemplateVersion(e.ltID, awstest.LaunchTemplateData{InstanceType: "m5.xlarge", ImageID: "ami-0fedcba9876543210", RootVolumeGiB: 80}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(11 * time.Minute) // past the $Latest cache and the refresh interval
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	d := c.Drifted()
	if len(d) != 2 {
		t.Fatalf("drifted %v, want both instances", d)
	}
	for id, why := range d {
		if !strings.HasPrefix(id, ProviderIDPrefix) || !strings.Contains(why, "version 1, the group launches version 2") {
			t.Errorf("drifted %s: %q", id, why)
		}
	}
}

func TestImageDrift(t *testing.T) {
	g := &astypes.AutoScalingGroup{Instances: []astypes.Instance{
		{InstanceId: aws.String("i-old"), LifecycleState: astypes.LifecycleStateInService},
		{InstanceId: aws.String("i-new"), LifecycleState: astypes.LifecycleStateInService},
		{InstanceId: aws.String("i-unread"), LifecycleState: astypes.LifecycleStateInService},
		{InstanceId: aws.String("i-pending"), LifecycleState: astypes.LifecycleStatePending},
	}}
	have := map[string]string{"i-old": "ami-1", "i-new": "ami-2", "i-pending": "ami-1"}
	for _, tc := range []struct {
		name, want string
		drifted    map[string]string
	}{
		{"the group launches another AMI", "ami-2", map[string]string{"i-old": "ami ami-1, the group launches ami-2"}},
		{"the group's AMI is not known", "", map[string]string{}},
		{"all launched from the group's AMI but one", "ami-1", map[string]string{"i-new": "ami ami-2, the group launches ami-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := imageDrift(g, have, tc.want)
			if len(got) != len(tc.drifted) {
				t.Fatalf("drift %v, want %v", got, tc.drifted)
			}
			for id, why := range tc.drifted {
				if got[id] != why {
					t.Errorf("drift of %s = %q, want %q", id, got[id], why)
				}
			}
		})
	}
}

// Against the emulator: a launch template whose image id is an SSM
// parameter; when the parameter moves to a new AMI, the instances are
// drifted; when the parameter cannot be read, none is.
func TestDriftedAfterTheSSMParameterMoves(t *testing.T) {
	e := newEnv(t)
	const param, oldAMI, newAMI = "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-0aaaaaaaaaaaaaaa1", "ami-0bbbbbbbbbbbbbbb2"
	e.srv.SetParameter(param, oldAMI)
	if _, err := e.srv.AddLaunchTemplateVersion(e.ltID, awstest.LaunchTemplateData{InstanceType: "m5.xlarge", ImageID: "resolve:ssm:" + param, RootVolumeGiB: 80}); err != nil {
		t.Fatal(err)
	}
	e.group("workers", 0, 5, 2, discoveredTags(nil))
	events := &eventLog{}
	c := e.cloud(Config{AutoDiscovery: discovery(), CompareImages: true}, events)
	if d := c.Drifted(); len(d) != 0 {
		t.Fatalf("drifted %v before the parameter moved\n%s", d, e.log)
	}
	if n := len(e.srv.RequestsOf("DescribeInstances")); n != 1 {
		t.Errorf("%d DescribeInstances calls for one refresh, want 1", n)
	}

	e.srv.ResetRequests()
	e.clock.Step(time.Minute)
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.RequestsOf("DescribeInstances")); n != 0 {
		t.Errorf("%d DescribeInstances calls for instances whose AMI was read, want 0 (an AMI never changes)", n)
	}

	e.srv.SetParameter(param, newAMI)
	// A role without ssm:GetParameter: not retried, one call fails.
	e.srv.FailRequests("GetParameter", 1, awstest.APIError{HTTPStatus: 400, Code: "AccessDeniedException", Message: "not authorized to perform: ssm:GetParameter"})
	e.clock.Step(11 * time.Minute) // past the parameter cache and the refresh interval
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	if d := c.Drifted(); len(d) != 0 {
		t.Fatalf("drifted %v while the parameter cannot be read\n%s", d, e.log)
	}
	if !strings.Contains(e.log.String(), "Could not read AMIs") {
		t.Errorf("no log of the failed read:\n%s", e.log)
	}
	reported := 0
	for _, ev := range events.all() {
		if ev.reason == EventReasonImageUnknown {
			reported++
		}
	}
	if reported != 1 {
		t.Errorf("%d %s events, want 1: %v", reported, EventReasonImageUnknown, events.all())
	}

	e.clock.Step(11 * time.Minute)
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	d := c.Drifted()
	if len(d) != 2 {
		t.Fatalf("drifted %v, want both instances\n%s", d, e.log)
	}
	for id, why := range d {
		if want := "ami " + oldAMI + ", the group launches " + newAMI; why != want {
			t.Errorf("drifted %s: %q, want %q", id, why, want)
		}
	}
}
