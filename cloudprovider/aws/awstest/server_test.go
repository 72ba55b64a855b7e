package awstest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
)

func clients(srv *awstest.Server, secret string) (*autoscaling.Client, *ec2.Client) {
	akid, _ := srv.Credentials()
	cfg := aws.Config{
		Region:       srv.Region(),
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, ""),
		BaseEndpoint: aws.String(srv.URL()),
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
	}
	return autoscaling.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestEmulatorSpeaksTheWireProtocols(t *testing.T) {
	var inService, gone []awstest.Instance
	srv := awstest.New(awstest.WithLaunchDelay(0), awstest.WithTerminateDelay(0), awstest.WithHooks(
		func(in awstest.Instance) { inService = append(inService, in) },
		func(in awstest.Instance) { gone = append(gone, in) }))
	defer srv.Close()
	_, secret := srv.Credentials()
	as, ec := clients(srv, secret)
	ctx := context.Background()
	lt := srv.AddLaunchTemplate(awstest.LaunchTemplate{Name: "lt", Versions: []awstest.LaunchTemplateData{{InstanceType: "m5.large"}}})
	if err := srv.AddGroup(awstest.GroupSpec{Name: "g", MinSize: 1, MaxSize: 3, DesiredCapacity: 1, AvailabilityZones: []string{"us-east-1a"},
		LaunchTemplate: &awstest.LaunchTemplateRef{ID: lt, Version: "$Latest"}, Tags: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	srv.Reconcile()
	srv.Reconcile()
	if len(inService) != 1 || inService[0].Group != "g" || inService[0].InstanceType != "m5.large" ||
		!strings.HasPrefix(inService[0].ProviderID(), "aws:///us-east-1a/i-") {
		t.Fatalf("in-service hook calls %+v", inService)
	}

	out, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"g"}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("describe: %v", err)
	}
	g := out.AutoScalingGroups[0]
	if aws.ToInt32(g.DesiredCapacity) != 1 || len(g.Instances) != 1 || string(g.Instances[0].LifecycleState) != "InService" ||
		aws.ToString(g.LaunchTemplate.LaunchTemplateId) != lt || len(g.Tags) != 1 || aws.ToString(g.Tags[0].Value) != "v" {
		t.Fatalf("group %+v", g)
	}
	if _, err := as.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("g"), DesiredCapacity: aws.Int32(4)}); apiCode(err) != "ValidationError" ||
		!strings.Contains(err.Error(), "above max value 3") {
		t.Fatalf("desired above max: %v", err)
	}
	if _, err := as.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("nope"), DesiredCapacity: aws.Int32(1)}); apiCode(err) != "ValidationError" {
		t.Fatalf("missing group: %v", err)
	}
	id := inService[0].ID
	if _, err := as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(id),
		ShouldDecrementDesiredCapacity: aws.Bool(true)}); apiCode(err) != "ValidationError" || !strings.Contains(err.Error(), "min size") {
		t.Fatalf("terminate below min: %v", err)
	}
	// Without decrementing, the group replaces the instance.
	if _, err := as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(id),
		ShouldDecrementDesiredCapacity: aws.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	srv.Reconcile()
	srv.Reconcile()
	snap, _ := srv.Group("g")
	if len(gone) != 1 || gone[0].ID != id || len(snap.Instances) != 1 || snap.Instances[0].ID == id || len(inService) != 2 {
		t.Fatalf("replacement: gone %+v, instances %+v", gone, snap.Instances)
	}
	acts, err := as.DescribeScalingActivities(ctx, &autoscaling.DescribeScalingActivitiesInput{AutoScalingGroupName: aws.String("g")})
	if err != nil || len(acts.Activities) != 3 || !strings.HasPrefix(aws.ToString(acts.Activities[0].Description), "Launching") {
		t.Fatalf("activities (newest first) %+v %v", acts, err)
	}

	its, err := ec.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"g4dn.xlarge"}})
	if err != nil || len(its.InstanceTypes) != 1 || aws.ToInt32(its.InstanceTypes[0].VCpuInfo.DefaultVCpus) != 4 ||
		aws.ToInt32(its.InstanceTypes[0].GpuInfo.Gpus[0].Count) != 1 {
		t.Fatalf("instance types %+v %v", its, err)
	}
	if _, err := ec.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}}); apiCode(err) != "InvalidInstanceType" {
		t.Fatalf("unknown type: %v", err)
	}
	v, err := ec.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("lt"), Versions: []string{"$Default"}})
	if err != nil || len(v.LaunchTemplateVersions) != 1 || v.LaunchTemplateVersions[0].LaunchTemplateData.InstanceType != "m5.large" {
		t.Fatalf("launch template versions %+v %v", v, err)
	}
	for _, r := range srv.Requests() {
		if !r.Signed {
			t.Fatalf("request %s not recorded as signed", r.Action)
		}
	}
}

func TestEmulatorRejectsBadRequests(t *testing.T) {
	srv := awstest.New(awstest.WithPageSize(1))
	defer srv.Close()
	ctx := context.Background()
	as, _ := clients(srv, "not-the-secret")
	if _, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{}); apiCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %v", err)
	}
	// Unsigned and malformed requests.
	post := func(body string) int {
		resp, err := http.Post(srv.URL(), "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(url.Values{"Action": {"DescribeAutoScalingGroups"}, "Version": {"2011-01-01"}}.Encode()); code != http.StatusForbidden {
		t.Fatalf("unsigned request: HTTP %d", code)
	}
	if code := post(url.Values{"Action": {"LaunchRockets"}}.Encode()); code != http.StatusBadRequest {
		t.Fatalf("unknown action: HTTP %d", code)
	}
	// Pages, and a bad token.
	_, secret := srv.Credentials()
	as, _ = clients(srv, secret)
	for _, n := range []string{"a", "b", "c"} {
		if err := srv.AddGroup(awstest.GroupSpec{Name: n, MaxSize: 1, AvailabilityZones: []string{"us-east-1a"}}); err != nil {
			t.Fatal(err)
		}
	}
	pages := autoscaling.NewDescribeAutoScalingGroupsPaginator(as, &autoscaling.DescribeAutoScalingGroupsInput{})
	var names []string
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range out.AutoScalingGroups {
			names = append(names, aws.ToString(g.AutoScalingGroupName))
		}
	}
	ok := 0
	for _, r := range srv.RequestsOf("DescribeAutoScalingGroups") {
		if r.Error == "" {
			ok++
		}
	}
	if strings.Join(names, ",") != "a,b,c" || ok != 3 {
		t.Fatalf("paged names %v after %d successful calls, want 3 pages", names, ok)
	}
	if errs := len(srv.RequestsOf("DescribeAutoScalingGroups")) - ok; errs != 2 {
		t.Fatalf("%d rejected requests recorded, want 2 (bad signature, unsigned)", errs)
	}
	if _, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{NextToken: aws.String("garbage")}); apiCode(err) != "InvalidNextToken" {
		t.Fatalf("bad token: %v", err)
	}
	// Injected faults come back as the SDK's API errors.
	srv.FailRequests("DescribeAutoScalingGroups", 1, awstest.Throttling())
	if _, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{}); apiCode(err) != "Throttling" {
		t.Fatalf("throttling: %v", err)
	}
}

// A failing launch is in progress for the failure delay, then Failed with
// EC2's message; the group tries again a retry interval after.
func TestEmulatorFailsLaunchesAfterTheFailureDelay(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv := awstest.New(awstest.WithClock(fc), awstest.WithFailureDelay(3*time.Second), awstest.WithLaunchRetry(2*time.Second))
	defer srv.Close()
	if err := srv.AddGroup(awstest.GroupSpec{Name: "g", MaxSize: 3, AvailabilityZones: []string{"us-east-1a"}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetLaunchFailure("g", awstest.InsufficientCapacity("m5.large", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetDesiredCapacity("g", 1); err != nil {
		t.Fatal(err)
	}
	activities := func() []awstest.Activity {
		g, _ := srv.Group("g")
		if len(g.Instances) != 0 {
			t.Fatalf("a failing group launched %+v", g.Instances)
		}
		return g.Activities
	}
	step := func(d time.Duration) {
		fc.Step(d)
		srv.Reconcile()
	}
	step(0)
	if a := activities(); len(a) != 1 || a[0].StatusCode != awstest.ActivityInProgress || a[0].Description != "Launching a new EC2 instance" {
		t.Fatalf("activities once the launch is tried: %+v", a)
	}
	step(2 * time.Second)
	if a := activities(); len(a) != 1 || a[0].StatusCode != awstest.ActivityInProgress {
		t.Fatalf("activities before the failure delay: %+v", a)
	}
	step(time.Second)
	a := activities()
	if len(a) != 1 || a[0].StatusCode != awstest.ActivityFailed || !strings.Contains(a[0].StatusMessage, "InsufficientInstanceCapacity - ") ||
		!strings.HasPrefix(a[0].Description, "Launching a new EC2 instance.  Status Reason: ") {
		t.Fatalf("activities after the failure delay: %+v", a)
	}
	step(time.Second)
	if a := activities(); len(a) != 1 {
		t.Fatalf("tried again before the retry interval: %+v", a)
	}
	step(time.Second)
	if a := activities(); len(a) != 2 || a[0].StatusCode != awstest.ActivityInProgress {
		t.Fatalf("activities a retry interval after the failure: %+v", a)
	}
}
