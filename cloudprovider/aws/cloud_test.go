package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
)

// Every request the provider makes is a signed Query-protocol request for
// the right service and region.
func checkRequestsSigned(t *testing.T, srv *awstest.Server) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the emulator received no request")
	}
	for _, r := range reqs {
		want := "autoscaling"
		if r.Action == "DescribeInstanceTypes" || r.Action == "DescribeLaunchTemplateVersions" {
			want = "ec2"
		}
		if !r.Signed || r.Service != want || r.Region != srv.Region() {
			t.Fatalf("request %s: signed=%v service=%q region=%q, want a valid signature for %s in %s", r.Action, r.Signed, r.Service, r.Region, want, srv.Region())
		}
		if !strings.Contains(r.UserAgent, "app/tidal") {
			t.Fatalf("request %s: user agent %q does not name tidal", r.Action, r.UserAgent)
		}
	}
}

func TestAutoDiscoveryFiltersByTagsAndFollowsPages(t *testing.T) {
	e := newEnv(t, awstest.WithPageSize(2))
	// Five matching groups so that discovery takes three pages, and
	// groups that must not be picked up.
	for i := 0; i < 5; i++ {
		e.group(fmt.Sprintf("workers-%d", i), i%2, 10+i, i%2, discoveredTags(nil))
	}
	e.group("other-cluster", 0, 5, 0, map[string]string{enabledTag: "true", "k8s.io/cluster-autoscaler/other": "owned"})
	e.group("disabled", 0, 5, 0, map[string]string{clusterTagKey: "owned"})
	e.group("untagged", 0, 5, 0, nil)
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)

	if got := strings.Join(ids(c), ","); got != "workers-0,workers-1,workers-2,workers-3,workers-4" {
		t.Fatalf("discovered %s", got)
	}
	g := groupByID(t, c, "workers-3")
	if g.MinSize() != 1 || g.MaxSize() != 13 {
		t.Fatalf("workers-3 sizes %d..%d, want the ASG's 1..13", g.MinSize(), g.MaxSize())
	}
	describes := e.srv.RequestsOf("DescribeAutoScalingGroups")
	if len(describes) != 3 {
		t.Fatalf("%d DescribeAutoScalingGroups calls, want 3 pages of 2", len(describes))
	}
	first := describes[0].Params
	if first.Get("Filters.member.1.Name") != "tag-key" || first.Get("Filters.member.1.Values.member.1") != enabledTag ||
		first.Get("Filters.member.2.Name") != "tag-key" || first.Get("Filters.member.2.Values.member.1") != clusterTagKey ||
		first.Get("NextToken") != "" || first.Get("MaxRecords") != "100" {
		t.Fatalf("first page request %v", first)
	}
	if describes[1].Params.Get("NextToken") == "" || describes[2].Params.Get("NextToken") == "" {
		t.Fatalf("later pages did not pass NextToken: %v / %v", describes[1].Params, describes[2].Params)
	}
	// The launch template and instance type are read once for all groups.
	if n := len(e.srv.RequestsOf("DescribeLaunchTemplateVersions")); n != 1 {
		t.Fatalf("%d DescribeLaunchTemplateVersions calls, want 1 (cached)", n)
	}
	its := e.srv.RequestsOf("DescribeInstanceTypes")
	if len(its) != 1 || its[0].Params.Get("InstanceType.1") != "m5.xlarge" {
		t.Fatalf("DescribeInstanceTypes calls %+v", its)
	}
	checkRequestsSigned(t, e.srv)
}

func TestAutoDiscoveryWithTagValuesAndSeveralSpecs(t *testing.T) {
	e := newEnv(t)
	e.group("blue", 0, 3, 0, map[string]string{"team": "blue", enabledTag: "true"})
	e.group("red", 0, 3, 0, map[string]string{"team": "red", enabledTag: "true"})
	e.group("gpu", 0, 3, 0, map[string]string{"pool": "gpu"})
	spec1 := AutoDiscoverySpec{Tags: []TagFilter{{Key: enabledTag}, {Key: "team", Value: "blue"}}}
	spec2 := AutoDiscoverySpec{Tags: []TagFilter{{Key: "pool"}}}
	c := e.cloud(Config{AutoDiscovery: []AutoDiscoverySpec{spec1, spec2}}, nil)
	if got := strings.Join(ids(c), ","); got != "blue,gpu" {
		t.Fatalf("discovered %s, want blue,gpu", got)
	}
	p := e.srv.RequestsOf("DescribeAutoScalingGroups")[0].Params
	if p.Get("Filters.member.2.Name") != "tag:team" || p.Get("Filters.member.2.Values.member.1") != "blue" {
		t.Fatalf("key=value tag not sent as a tag:<key> filter: %v", p)
	}
	// A group that loses its tag is no longer managed; one that gains it is.
	if err := e.srv.SetTag("red", "team", "blue"); err != nil {
		t.Fatal(err)
	}
	e.srv.DeleteGroup("gpu")
	e.clock.Step(2 * time.Minute)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(c), ","); got != "blue,red" {
		t.Fatalf("after retagging, groups %s, want blue,red", got)
	}
}

func TestExplicitGroupsClampSizesAndReportMissingASG(t *testing.T) {
	e := newEnv(t)
	e.group("apps", 1, 6, 2, nil)
	events := &eventLog{}
	c := e.cloud(Config{NodeGroups: []cloudprovider.NodeGroupSpec{{MinSize: 0, MaxSize: 20, Name: "apps"}, {MinSize: 1, MaxSize: 3, Name: "typo-asg"}}}, events)

	if got := strings.Join(ids(c), ","); got != "apps" {
		t.Fatalf("groups %s: the missing ASG must be left out", got)
	}
	g := groupByID(t, c, "apps")
	if g.MinSize() != 1 || g.MaxSize() != 6 {
		t.Fatalf("--nodes=0:20:apps on an ASG of 1..6 gave %d..%d, want 1..6", g.MinSize(), g.MaxSize())
	}
	p := e.srv.RequestsOf("DescribeAutoScalingGroups")[0].Params
	if p.Get("AutoScalingGroupNames.member.1") != "apps" || p.Get("AutoScalingGroupNames.member.2") != "typo-asg" {
		t.Fatalf("names not asked for: %v", p)
	}
	ev := events.all()
	if len(ev) != 1 || ev[0].typ != corev1.EventTypeWarning || ev[0].reason != EventReasonNodeGroupNotFound ||
		!strings.Contains(ev[0].message, `"typo-asg"`) || !strings.Contains(ev[0].message, "--nodes=1:3:typo-asg") {
		t.Fatalf("events %+v, want one NodeGroupNotFound warning naming the ASG and the flag", ev)
	}
	if log := e.log.String(); !strings.Contains(log, "Auto Scaling Group not found") || !strings.Contains(log, "typo-asg") {
		t.Fatalf("no clear log line for the missing ASG:\n%s", log)
	}
	if log := e.log.String(); !strings.Contains(log, "using the ASG's bounds") {
		t.Fatalf("clamping --nodes sizes was not logged:\n%s", log)
	}
	// Reported once, not on every refresh; found again when created.
	e.clock.Step(2 * time.Minute)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(events.all()) != 1 {
		t.Fatalf("the missing ASG was reported again: %+v", events.all())
	}
	e.group("typo-asg", 0, 2, 0, nil)
	e.clock.Step(2 * time.Minute)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	g = groupByID(t, c, "typo-asg")
	if g.MinSize() != 1 || g.MaxSize() != 2 {
		t.Fatalf("typo-asg sizes %d..%d, want --nodes' min 1 and the ASG's max 2", g.MinSize(), g.MaxSize())
	}
}

func TestIncreaseSizeSetsDesiredCapacityAndInstancesLaunch(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 4, 1, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	g := groupByID(t, c, "web")
	e.srv.ResetRequests()

	if err := g.IncreaseSize(context.Background(), 5); err == nil || !strings.Contains(err.Error(), "would exceed max size 4") {
		t.Fatalf("increase beyond max: %v", err)
	}
	if err := g.IncreaseSize(context.Background(), 0); err == nil {
		t.Fatal("increase by 0 accepted")
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Fatalf("refused increases made %d calls", n)
	}
	if err := g.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatalf("increase: %v", err)
	}
	reqs := e.srv.RequestsOf("SetDesiredCapacity")
	if len(reqs) != 1 || reqs[0].Params.Get("AutoScalingGroupName") != "web" || reqs[0].Params.Get("DesiredCapacity") != "3" ||
		reqs[0].Params.Get("HonorCooldown") != "false" {
		t.Fatalf("SetDesiredCapacity requests %+v", reqs)
	}
	if mustGroup(t, e.srv, "web").DesiredCapacity != 3 {
		t.Fatal("the emulator's desired capacity did not change")
	}
	if size, _ := g.TargetSize(); size != 3 {
		t.Fatalf("target size %d right after the increase, want 3", size)
	}
	// Before the next refresh the new instances are placeholders.
	instances, _ := g.Nodes()
	if len(instances) != 3 || countStates(instances)[cloudprovider.InstanceCreating] != 2 ||
		!strings.Contains(instances[2].Id, "/i-placeholder-web-2") {
		t.Fatalf("instances right after the increase: %+v", instances)
	}
	// The change makes the next Refresh read again, even though the cache
	// is young.
	e.srv.Reconcile()
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	instances, _ = g.Nodes()
	snap := mustGroup(t, e.srv, "web")
	if len(instances) != 3 || countStates(instances)[cloudprovider.InstanceCreating] != 2 {
		t.Fatalf("after refresh: %+v", instances)
	}
	for _, in := range snap.Instances {
		found := false
		for _, got := range instances {
			found = found || got.Id == in.ProviderID()
		}
		if !found {
			t.Fatalf("instance %s (%s) not listed with its providerID: %+v", in.ID, in.ProviderID(), instances)
		}
	}
	// Once they are in service they are Running.
	e.clock.Step(time.Minute)
	e.srv.Reconcile()
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	instances, _ = g.Nodes()
	if countStates(instances)[cloudprovider.InstanceRunning] != 3 {
		t.Fatalf("after launch: %+v", instances)
	}
	for _, in := range instances {
		if in.Status.ErrorInfo != nil {
			t.Fatalf("healthy instance with error info: %+v", in)
		}
	}
	checkRequestsSigned(t, e.srv)
}

func TestRefreshIsCheapWhileFresh(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 4, 1, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery(), RefreshInterval: time.Minute, ConvergingRefreshInterval: 10 * time.Second}, nil)
	e.srv.ResetRequests()
	for i := 0; i < 5; i++ {
		if err := c.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.clock.Step(10 * time.Second)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Fatalf("Refresh within the interval made %d calls", n)
	}
	e.clock.Step(10 * time.Second)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.RequestsOf("DescribeAutoScalingGroups")); n != 1 {
		t.Fatalf("%d describes once the interval passed, want 1", n)
	}
	// The launch template and the instance type stay cached.
	if n := len(e.srv.RequestsOf("DescribeInstanceTypes")) + len(e.srv.RequestsOf("DescribeLaunchTemplateVersions")); n != 0 {
		t.Fatalf("%d instance type / launch template calls on a routine refresh, want 0", n)
	}
	// While instances are missing, the group is read every converging
	// interval.
	if err := e.srv.SetDesiredCapacity("web", 2); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.srv.ResetRequests()
	e.clock.Step(5 * time.Second)
	_ = c.Refresh(context.Background())
	if n := len(e.srv.RequestsOf("DescribeAutoScalingGroups")); n != 0 {
		t.Fatalf("converging group read before the converging interval: %d", n)
	}
	e.clock.Step(5 * time.Second)
	_ = c.Refresh(context.Background())
	if n := len(e.srv.RequestsOf("DescribeAutoScalingGroups")); n != 1 {
		t.Fatalf("converging group not read after the converging interval: %d", n)
	}
}

func TestThrottlingAndServerErrorsAreRetried(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 4, 1, discoveredTags(nil))
	e.srv.FailRequests("DescribeAutoScalingGroups", 2, awstest.Throttling())
	e.srv.FailRequests("DescribeInstanceTypes", 1, awstest.RequestLimitExceeded())
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	describes := e.srv.RequestsOf("DescribeAutoScalingGroups")
	if len(describes) != 3 || describes[0].Error != "Throttling" || describes[1].Error != "Throttling" || describes[2].Error != "" {
		t.Fatalf("describe attempts %+v, want two throttled then one success", describes)
	}
	if its := e.srv.RequestsOf("DescribeInstanceTypes"); len(its) != 2 || its[0].Error != "RequestLimitExceeded" {
		t.Fatalf("instance type attempts %+v", its)
	}
	if _, err := groupByID(t, c, "web").TemplateNodeInfo(context.Background()); err != nil {
		t.Fatalf("template after a retried call: %v", err)
	}
	e.srv.FailRequests("SetDesiredCapacity", 1, awstest.ServiceUnavailable())
	if err := groupByID(t, c, "web").IncreaseSize(context.Background(), 1); err != nil {
		t.Fatalf("increase after a 503: %v", err)
	}
	if n := len(e.srv.RequestsOf("SetDesiredCapacity")); n != 2 {
		t.Fatalf("%d SetDesiredCapacity attempts, want 2", n)
	}
}

func TestPersistentErrorsLeaveGroupsStaleAndUntouched(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 4, 1, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery(), RefreshInterval: time.Minute}, nil)
	g := groupByID(t, c, "web")
	e.srv.FailRequests("DescribeAutoScalingGroups", 1000, awstest.Throttling())
	e.clock.Step(time.Minute)
	err := c.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Throttling") || !strings.Contains(err.Error(), "discover Auto Scaling Groups") {
		t.Fatalf("refresh under throttling: %v", err)
	}
	if n := len(e.srv.RequestsOf("DescribeAutoScalingGroups")); n != 1+DefaultMaxAttempts {
		t.Fatalf("%d describes, want the first read plus %d attempts", n, DefaultMaxAttempts)
	}
	// Still within the staleness bound: the cached data serves.
	if size, err := g.TargetSize(); err != nil || size != 1 {
		t.Fatalf("target %d, %v", size, err)
	}
	e.clock.Step(90 * time.Second)
	e.srv.ResetRequests()
	for name, op := range map[string]func() error{
		"increase": func() error { return g.IncreaseSize(context.Background(), 1) },
		"decrease": func() error { return g.DecreaseTargetSize(context.Background(), -1) },
		"delete": func() error {
			in := mustGroup(t, e.srv, "web").Instances[0]
			return g.DeleteNodes(context.Background(), []*corev1.Node{nodeFor(in)})
		},
	} {
		if err := op(); err == nil || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("%s on a stale group: %v", name, err)
		}
	}
	for _, r := range e.srv.Requests() {
		if r.Action == "SetDesiredCapacity" || r.Action == "TerminateInstanceInAutoScalingGroup" {
			t.Fatalf("a stale group was changed: %+v", r)
		}
	}
}

func TestCapacityErrorsSurfaceOnPlaceholders(t *testing.T) {
	e := newEnv(t)
	e.group("gpu", 0, 5, 0, discoveredTags(nil))
	e.group("other", 0, 5, 0, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	if err := e.srv.SetLaunchFailure("gpu", awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.SetLaunchFailure("other", awstest.LaunchFailure{Code: "InvalidAMIID.NotFound", Message: "The image id '[ami-1]' does not exist"}); err != nil {
		t.Fatal(err)
	}
	gpu, other := groupByID(t, c, "gpu"), groupByID(t, c, "other")
	for _, g := range []cloudprovider.NodeGroup{gpu, other} {
		if err := g.IncreaseSize(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Step(time.Second)
	e.srv.Reconcile()
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	check := func(g cloudprovider.NodeGroup, class cloudprovider.InstanceErrorClass, code string) {
		t.Helper()
		instances, err := g.Nodes()
		if err != nil || len(instances) != 2 {
			t.Fatalf("%s instances %+v, %v", g.Id(), instances, err)
		}
		for i, in := range instances {
			info := in.Status.ErrorInfo
			if in.Id != ProviderID("us-east-1a", placeholderID(g.Id(), i)) || in.Status.State != cloudprovider.InstanceCreating ||
				info == nil || info.ErrorClass != class || info.ErrorCode != code || !strings.Contains(info.ErrorMessage, g.Id()) {
				t.Fatalf("%s placeholder %d: %+v %+v", g.Id(), i, in, info)
			}
		}
	}
	check(gpu, cloudprovider.OutOfResourcesErrorClass, "InsufficientInstanceCapacity")
	check(other, cloudprovider.OtherErrorClass, "InvalidAMIID.NotFound")
	if n := len(e.srv.RequestsOf("DescribeScalingActivities")); n != 2 {
		t.Fatalf("%d DescribeScalingActivities, want one per group short of instances", n)
	}

	// The node loop cancels the failed requests.
	if err := gpu.DecreaseTargetSize(context.Background(), -3); err == nil || !strings.Contains(err.Error(), "below min size") && !strings.Contains(err.Error(), "cannot decrease") {
		t.Fatalf("decrease below zero: %v", err)
	}
	if err := gpu.DecreaseTargetSize(context.Background(), -2); err != nil {
		t.Fatalf("cancel placeholders: %v", err)
	}
	if mustGroup(t, e.srv, "gpu").DesiredCapacity != 0 {
		t.Fatal("desired capacity not lowered")
	}
	// Capacity comes back: a new increase launches.
	e.srv.ClearLaunchFailure("gpu")
	if err := gpu.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.srv.Reconcile()
	e.clock.Step(11 * time.Second)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	instances, _ := gpu.Nodes()
	if len(instances) != 1 || instances[0].Status.ErrorInfo != nil || strings.Contains(instances[0].Id, "placeholder") {
		t.Fatalf("after capacity came back: %+v", instances)
	}
}

func TestDecreaseTargetSizeNeverRemovesInstances(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 5, 2, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	g := groupByID(t, c, "web")
	if err := g.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.srv.ResetRequests()
	if err := g.DecreaseTargetSize(context.Background(), -2); err == nil || !strings.Contains(err.Error(), "2 instance(s) exist") {
		t.Fatalf("decrease past the launched instances: %v", err)
	}
	if err := g.DecreaseTargetSize(context.Background(), 1); err == nil {
		t.Fatal("a positive delta was accepted")
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Fatalf("refused decreases made %d calls", n)
	}
	if err := g.DecreaseTargetSize(context.Background(), -1); err != nil {
		t.Fatalf("cancel the request not launched: %v", err)
	}
	if r := e.srv.RequestsOf("SetDesiredCapacity"); len(r) != 1 || r[0].Params.Get("DesiredCapacity") != "2" {
		t.Fatalf("SetDesiredCapacity %+v", r)
	}
}

func TestDeleteNodesTerminatesInstancesWithDecrement(t *testing.T) {
	e := newEnv(t)
	e.group("web", 1, 5, 3, discoveredTags(nil))
	e.group("db", 0, 5, 1, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	g := groupByID(t, c, "web")
	web := mustGroup(t, e.srv, "web").Instances
	db := mustGroup(t, e.srv, "db").Instances
	e.srv.ResetRequests()

	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/not-an-instance"}}
	for name, tc := range map[string]struct {
		nodes   []*corev1.Node
		wantErr string
	}{
		"other group":   {[]*corev1.Node{nodeFor(db[0])}, "belongs to Auto Scaling Group db"},
		"malformed":     {[]*corev1.Node{bad}, "is not an EC2 instance id"},
		"below minimum": {[]*corev1.Node{nodeFor(web[0]), nodeFor(web[1]), nodeFor(web[2])}, "below min size 1"},
	} {
		if err := g.DeleteNodes(context.Background(), tc.nodes); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Fatalf("%s: error %v, want %q", name, err, tc.wantErr)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Fatalf("refused deletions made %d calls", n)
	}
	if err := g.DeleteNodes(context.Background(), []*corev1.Node{nodeFor(web[1])}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	reqs := e.srv.RequestsOf("TerminateInstanceInAutoScalingGroup")
	if len(reqs) != 1 || reqs[0].Params.Get("InstanceId") != web[1].ID || reqs[0].Params.Get("ShouldDecrementDesiredCapacity") != "true" {
		t.Fatalf("terminate requests %+v", reqs)
	}
	if size, _ := g.TargetSize(); size != 2 {
		t.Fatalf("target %d after deleting one of 3, want 2", size)
	}
	snap := mustGroup(t, e.srv, "web")
	if snap.DesiredCapacity != 2 {
		t.Fatalf("emulator desired %d", snap.DesiredCapacity)
	}
	instances, _ := g.Nodes()
	if countStates(instances)[cloudprovider.InstanceDeleting] != 1 {
		t.Fatalf("the terminated instance is not Deleting: %+v", instances)
	}
	// Deleting it again is a no-op; the instance goes away and the group
	// does not replace it.
	if err := g.DeleteNodes(context.Background(), []*corev1.Node{nodeFor(web[1])}); err != nil {
		t.Fatalf("deleting a terminating node: %v", err)
	}
	e.clock.Step(time.Minute)
	e.srv.Reconcile()
	e.srv.Reconcile()
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	instances, _ = g.Nodes()
	if len(instances) != 2 || countStates(instances)[cloudprovider.InstanceRunning] != 2 {
		t.Fatalf("after termination: %+v", instances)
	}
}

func TestDeleteNodesRemovesPlaceholdersByLoweringDesired(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 5, 1, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	g := groupByID(t, c, "web")
	if err := e.srv.SetLaunchFailure("web", awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	if err := g.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	instances, _ := g.Nodes()
	var fake []*corev1.Node
	for _, in := range instances {
		if strings.Contains(in.Id, "placeholder") {
			fake = append(fake, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Id}, Spec: corev1.NodeSpec{ProviderID: in.Id}})
		}
	}
	if len(fake) != 2 {
		t.Fatalf("placeholders %+v", instances)
	}
	if ng, err := c.NodeGroupForNode(fake[0]); err != nil || ng == nil || ng.Id() != "web" {
		t.Fatalf("NodeGroupForNode(placeholder) = %v, %v", ng, err)
	}
	e.srv.ResetRequests()
	if err := g.DeleteNodes(context.Background(), fake); err != nil {
		t.Fatalf("delete placeholders: %v", err)
	}
	if r := e.srv.RequestsOf("SetDesiredCapacity"); len(r) != 1 || r[0].Params.Get("DesiredCapacity") != "1" {
		t.Fatalf("SetDesiredCapacity %+v", r)
	}
	if n := len(e.srv.RequestsOf("TerminateInstanceInAutoScalingGroup")); n != 0 {
		t.Fatalf("placeholders were terminated (%d calls)", n)
	}
}

func TestNodeGroupForNode(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 5, 1, discoveredTags(nil))
	e.group("unmanaged", 0, 5, 1, nil)
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	web := mustGroup(t, e.srv, "web").Instances[0]
	unmanaged := mustGroup(t, e.srv, "unmanaged").Instances[0]
	node := func(id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: id}}
	}
	if ng, err := c.NodeGroupForNode(nodeFor(web)); err != nil || ng == nil || ng.Id() != "web" {
		t.Fatalf("managed node: %v %v", ng, err)
	}
	for _, id := range []string{unmanaged.ProviderID(), "", "local:///general-a/general-a-00001", "aws:///us-east-1a/0a1b2c3d/fargate-ip-10-0-1-2.ec2.internal"} {
		if ng, err := c.NodeGroupForNode(node(id)); ng != nil || err != nil {
			t.Fatalf("NodeGroupForNode(%q) = %v, %v; want nil, nil", id, ng, err)
		}
	}
	if _, err := c.NodeGroupForNode(node("aws:///us-east-1a/i-xyz")); err == nil || !strings.Contains(err.Error(), "not an EC2 instance id") {
		t.Fatalf("malformed aws providerID: %v", err)
	}
}

func TestTemplatesFromLaunchTemplatesMixedPoliciesAndLaunchConfigurations(t *testing.T) {
	e := newEnv(t)
	gpuLT := e.srv.AddLaunchTemplate(awstest.LaunchTemplate{Name: "gpu", Versions: []awstest.LaunchTemplateData{{InstanceType: "g4dn.xlarge"}}})
	abisLT := e.srv.AddLaunchTemplate(awstest.LaunchTemplate{Name: "abis", Versions: []awstest.LaunchTemplateData{{ImageID: "ami-1"}}})
	e.srv.AddLaunchConfiguration(awstest.LaunchConfiguration{Name: "legacy", InstanceType: "t3.medium", RootVolumeGiB: 30})
	add := func(spec awstest.GroupSpec) {
		spec.AvailabilityZones = []string{"us-east-1c"}
		spec.MaxSize = 3
		spec.Tags = discoveredTags(spec.Tags)
		if err := e.srv.AddGroup(spec); err != nil {
			t.Fatal(err)
		}
	}
	add(awstest.GroupSpec{Name: "by-name", LaunchTemplate: &awstest.LaunchTemplateRef{Name: "gpu", Version: "$Default"},
		Tags: map[string]string{LabelTagPrefix + GPULabel: "nvidia-tesla-t4", TaintTagPrefix + "nvidia.com/gpu": "present:NoSchedule"}})
	add(awstest.GroupSpec{Name: "mixed", MixedInstancesPolicy: &awstest.MixedInstancesPolicy{
		LaunchTemplate: awstest.LaunchTemplateRef{ID: e.ltID, Version: "1"},
		Overrides:      []awstest.Override{{InstanceType: "m6g.large"}, {InstanceType: "m5.large"}}}})
	add(awstest.GroupSpec{Name: "abis", MixedInstancesPolicy: &awstest.MixedInstancesPolicy{
		LaunchTemplate: awstest.LaunchTemplateRef{ID: abisLT, Version: "$Latest"},
		Overrides:      []awstest.Override{{Requirements: &awstest.InstanceRequirements{VCPUMin: 4, VCPUMax: 8, MemoryMiBMin: 8192}}}}})
	add(awstest.GroupSpec{Name: "legacy", LaunchConfigurationName: "legacy"})
	add(awstest.GroupSpec{Name: "broken", LaunchTemplate: &awstest.LaunchTemplateRef{ID: "lt-000000000000000ff", Version: "$Latest"}})
	_ = gpuLT
	c := e.cloud(Config{AutoDiscovery: discovery(), NodeReservation: NodeReservationNone}, nil)

	tmpl := func(name string) *corev1.Node {
		t.Helper()
		nt, err := groupByID(t, c, name).TemplateNodeInfo(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return nt.Node
	}
	n := tmpl("by-name")
	gpus := n.Status.Capacity[ResourceNvidiaGPU]
	if n.Labels[corev1.LabelInstanceTypeStable] != "g4dn.xlarge" || gpus.Value() != 1 ||
		n.Labels[GPULabel] != "nvidia-tesla-t4" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "nvidia.com/gpu" ||
		n.Labels[corev1.LabelTopologyZone] != "us-east-1c" || n.Status.Capacity.Pods().Value() != 29 {
		t.Fatalf("g4dn template: labels %v taints %v capacity %v", n.Labels, n.Spec.Taints, n.Status.Capacity)
	}
	n = tmpl("mixed")
	if n.Labels[corev1.LabelInstanceTypeStable] != "m6g.large" || n.Labels[corev1.LabelArchStable] != "arm64" ||
		n.Status.Capacity.Cpu().Value() != 2 || n.Status.Capacity.StorageEphemeral().Value() != 80<<30 {
		t.Fatalf("mixed template: labels %v capacity %v", n.Labels, n.Status.Capacity)
	}
	n = tmpl("abis")
	if _, ok := n.Labels[corev1.LabelInstanceTypeStable]; ok || n.Status.Capacity.Cpu().Value() != 4 || n.Status.Capacity.Memory().Value() != 8192<<20 ||
		n.Status.Capacity.Pods().Value() != 110 {
		t.Fatalf("attribute-based template: labels %v capacity %v", n.Labels, n.Status.Capacity)
	}
	n = tmpl("legacy")
	if n.Labels[corev1.LabelInstanceTypeStable] != "t3.medium" || n.Status.Capacity.StorageEphemeral().Value() != 30<<30 ||
		n.Status.Capacity.Pods().Value() != 17 {
		t.Fatalf("launch configuration template: labels %v capacity %v", n.Labels, n.Status.Capacity)
	}
	if _, err := groupByID(t, c, "broken").TemplateNodeInfo(context.Background()); err == nil || !strings.Contains(err.Error(), "InvalidLaunchTemplateId.NotFound") {
		t.Fatalf("a missing launch template: %v", err)
	}
	for _, r := range e.srv.RequestsOf("DescribeLaunchTemplateVersions") {
		if r.Params.Get("LaunchTemplateVersion.1") == "" {
			t.Fatalf("launch template version not asked for: %v", r.Params)
		}
	}

	// $Latest is read again after the TTL: a new version with another
	// instance type changes the template of the groups that use it.
	if _, err := e.srv.AddLaunchTemplateVersion(e.ltID, awstest.LaunchTemplateData{InstanceType: "m5.2xlarge"}); err != nil {
		t.Fatal(err)
	}
	e.group("latest", 0, 3, 0, discoveredTags(nil))
	e.clock.Step(11 * time.Minute)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if it := tmpl("latest").Labels[corev1.LabelInstanceTypeStable]; it != "m5.2xlarge" {
		t.Fatalf("template after a new $Latest version: %s", it)
	}
	if it := tmpl("mixed").Labels[corev1.LabelInstanceTypeStable]; it != "m6g.large" {
		t.Fatalf("mixed group pinned to version 1 changed: %s", it)
	}
}

func TestGetOptionsFromTags(t *testing.T) {
	e := newEnv(t)
	e.group("tuned", 0, 3, 0, discoveredTags(map[string]string{
		OptionTagPrefix + "scaledownutilizationthreshold":    "0.3",
		OptionTagPrefix + "scaledownunneededtime":            "3m",
		OptionTagPrefix + "ignoredaemonsetsutilization":      "true",
		OptionTagPrefix + "scaledowngpuutilizationthreshold": "0.25",
		OptionTagPrefix + "maxnodeprovisiontime":             "oops",
	}))
	e.group("plain", 0, 3, 0, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	defaults := cloudprovider.NodeGroupAutoscalingOptions{ScaleDownUtilizationThreshold: 0.5, ScaleDownGpuUtilizationThreshold: 0.5,
		ScaleDownUnneededTime: 10 * time.Minute, MaxNodeProvisionTime: 15 * time.Minute}
	got, err := groupByID(t, c, "tuned").GetOptions(defaults)
	if err != nil || got.ScaleDownUtilizationThreshold != 0.3 || got.ScaleDownUnneededTime != 3*time.Minute ||
		!got.IgnoreDaemonSetsUtilization || got.ScaleDownGpuUtilizationThreshold != 0.25 || got.MaxNodeProvisionTime != 15*time.Minute {
		t.Fatalf("options %+v, %v", got, err)
	}
	if _, err := groupByID(t, c, "plain").GetOptions(defaults); !errors.Is(err, cloudprovider.ErrNotImplemented) {
		t.Fatalf("group without option tags: %v", err)
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	e := newEnv(t)
	e.group("web", 1, 3, 1, discoveredTags(nil))
	e.srv.FailRequests("DescribeAutoScalingGroups", 1, awstest.Throttling())
	events := &eventLog{}
	c := e.cloud(Config{AutoDiscovery: discovery()}, events)
	g := groupByID(t, c, "web")
	var errs []error
	errs = append(errs, g.IncreaseSize(context.Background(), 1), g.IncreaseSize(context.Background(), 5))
	in := mustGroup(t, e.srv, "web").Instances[0]
	errs = append(errs, g.DeleteNodes(context.Background(), []*corev1.Node{nodeFor(in)}))
	e.srv.FailRequests("", 100, awstest.ServiceUnavailable())
	e.clock.Step(5 * time.Minute)
	errs = append(errs, c.Refresh(context.Background()))

	akid, secret := e.srv.Credentials()
	text := e.log.String()
	for _, err := range errs {
		if err != nil {
			text += err.Error()
		}
	}
	for _, ev := range events.all() {
		text += ev.message
	}
	if strings.Contains(text, secret) || strings.Contains(text, akid) {
		t.Fatalf("credentials appear in logs, errors or events:\n%s", text)
	}
	if !strings.Contains(e.log.String(), "Set desired capacity") {
		t.Fatalf("the log was not captured:\n%s", e.log.String())
	}
}

func TestDefaultCredentialChainAndEndpointFromEnvironment(t *testing.T) {
	e := newEnv(t)
	e.group("web", 0, 3, 0, discoveredTags(nil))
	akid, secret := e.srv.Credentials()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": e.srv.Region(),
		"AWS_ENDPOINT_URL": e.srv.URL(), "AWS_CONFIG_FILE": dir + "/none", "AWS_SHARED_CREDENTIALS_FILE": dir + "/none",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_SESSION_TOKEN": "",
	} {
		t.Setenv(k, v)
	}
	clients, err := NewClients(e.ctx, ClientOptions{MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if clients.Region != e.srv.Region() {
		t.Fatalf("region %q from the environment, want %q", clients.Region, e.srv.Region())
	}
	c, err := New(e.ctx, Config{AutoDiscovery: discovery()}, clients, WithClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(c), ","); got != "web" {
		t.Fatalf("groups %s", got)
	}
	checkRequestsSigned(t, e.srv)

	// Wrong credentials are refused by the emulator's signature check.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	clients, err = NewClients(e.ctx, ClientOptions{MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(e.ctx, Config{AutoDiscovery: discovery()}, clients, WithClock(e.clock)); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("bad secret: %v", err)
	}
}

func TestNoRegionIsAClearError(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": dir + "/none",
		"AWS_SHARED_CREDENTIALS_FILE": dir + "/none", "AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": ""} {
		t.Setenv(k, v)
	}
	if _, err := NewClients(t.Context(), ClientOptions{}); err == nil || !strings.Contains(err.Error(), "--aws-region") {
		t.Fatalf("no region: %v", err)
	}
}
