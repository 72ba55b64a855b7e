package aws

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
)

// spotEnv is an emulator with an on-demand group, a group whose launch
// template asks for spot, and a mixed instances policy all spot above an
// on-demand base of 0, in us-east-1a and us-east-1b; one instance each.
func spotEnv(t *testing.T) *env {
	e := newEnv(t)
	spotLT := e.srv.AddLaunchTemplate(awstest.LaunchTemplate{Name: "spot", Versions: []awstest.LaunchTemplateData{
		{InstanceType: "m5.xlarge", ImageID: "ami-0123456789abcdef0", Spot: true}}})
	zero := 0
	for _, spec := range []awstest.GroupSpec{
		{Name: "on-demand", LaunchTemplate: &awstest.LaunchTemplateRef{ID: e.ltID, Version: "$Latest"}},
		{Name: "spot-lt", LaunchTemplate: &awstest.LaunchTemplateRef{ID: spotLT, Version: "$Latest"}},
		{Name: "spot-mixed", MixedInstancesPolicy: &awstest.MixedInstancesPolicy{
			LaunchTemplate: awstest.LaunchTemplateRef{ID: e.ltID, Version: "$Latest"},
			Overrides:      []awstest.Override{{InstanceType: "m5.large"}}, OnDemandPercentageAboveBaseCapacity: &zero}},
	} {
		spec.MinSize, spec.MaxSize, spec.DesiredCapacity = 0, 3, 1
		spec.AvailabilityZones = []string{"us-east-1a", "us-east-1b"}
		spec.Tags = discoveredTags(nil)
		if err := e.srv.AddGroup(spec); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	return e
}

var spotTestTable = PriceTable{"m5.xlarge": 0.192, "m5.large": 0.096}

// TestSpotAndOnDemandPricesOverTheWire prices an on-demand group from the
// price table and two spot groups from DescribeSpotPriceHistory, read by
// the real SDK from the emulator: each type once per TTL, in the groups'
// zones, at the dearer zone's newest price; and a spot group's running
// instance at the spot price.
func TestSpotAndOnDemandPricesOverTheWire(t *testing.T) {
	e := spotEnv(t)
	now := e.clock.Now()
	for _, p := range []awstest.SpotPrice{
		{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: "0.0900", Time: now.Add(-3 * time.Hour)},
		{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: "0.0700", Time: now.Add(-time.Hour)},
		{InstanceType: "m5.xlarge", Zone: "us-east-1b", Price: "0.0650", Time: now.Add(-2 * time.Hour)},
		{InstanceType: "m5.xlarge", Zone: "us-east-1c", Price: "0.0100", Time: now.Add(-time.Hour)},
		{InstanceType: "m5.large", Zone: "us-east-1a", Price: "0.0350", Time: now.Add(-time.Hour)},
		{InstanceType: "m5.large", Zone: "us-east-1b", Price: "0.0380", Time: now.Add(-time.Hour)},
	} {
		e.srv.SetSpotPrice(p)
	}
	events := &eventLog{}
	c := e.cloud(Config{AutoDiscovery: discovery(), Prices: spotTestTable}, events)
	m, err := c.Pricing()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"on-demand": 0.192, "spot-lt": 0.07, "spot-mixed": 0.038}
	for group, price := range want {
		got, err := cloudprovider.GroupNodePrice(m, group, nil, now, now.Add(time.Hour))
		if err != nil || got != price {
			t.Errorf("price of a node of %s = %v, %v; want %v\nlog:\n%s", group, got, err, price, e.log)
		}
	}
	inst := mustGroup(t, e.srv, "spot-lt").Instances
	if len(inst) != 1 {
		t.Fatalf("spot-lt has %d instances, want 1", len(inst))
	}
	node := nodeFor(inst[0])
	node.Labels = map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge"}
	if got, err := m.NodePrice(node, now, now.Add(2*time.Hour)); err != nil || got != 0.14 {
		t.Errorf("price of spot-lt's instance over 2 h = %v, %v; want 0.14", got, err)
	}
	node.Labels[LabelEKSCapacityType] = "ON_DEMAND"
	if got, err := m.NodePrice(node, now, now.Add(time.Hour)); err != nil || got != 0.192 {
		t.Errorf("price of an instance labelled ON_DEMAND = %v, %v; want 0.192", got, err)
	}

	reqs := e.srv.RequestsOf("DescribeSpotPriceHistory")
	if len(reqs) != 2 {
		t.Fatalf("%d DescribeSpotPriceHistory calls, want one per spot type (2)", len(reqs))
	}
	for _, r := range reqs {
		if !r.Signed || r.Service != "ec2" || r.Params.Get("Filter.1.Name") != "availability-zone" ||
			r.Params.Get("Filter.1.Value.1") != "us-east-1a" || r.Params.Get("Filter.1.Value.2") != "us-east-1b" ||
			r.Params.Get("ProductDescription.1") != "Linux/UNIX" || r.Params.Get("StartTime") == "" {
			t.Errorf("DescribeSpotPriceHistory request %v (signed %v, service %s) does not ask for the groups' zones and Linux at now", r.Params, r.Signed, r.Service)
		}
	}
	// Within the TTL refreshes read the groups, not the prices.
	e.clock.Step(DefaultRefreshInterval)
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.RequestsOf("DescribeSpotPriceHistory")); n != 2 {
		t.Fatalf("%d DescribeSpotPriceHistory calls after a refresh within the TTL, want still 2", n)
	}
	// After it, the new price is read.
	e.srv.SetSpotPrice(awstest.SpotPrice{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: "0.0800"})
	e.clock.Step(DefaultSpotPriceTTL)
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	now = e.clock.Now()
	if got, err := cloudprovider.GroupNodePrice(m, "spot-lt", nil, now, now.Add(time.Hour)); err != nil || got != 0.08 {
		t.Errorf("price of spot-lt after the TTL = %v, %v; want the new 0.08", got, err)
	}
	if len(events.all()) != 0 {
		t.Errorf("events %v, want none", events.all())
	}
}

// TestSpotPriceFailuresAreNoPrice: a denied DescribeSpotPriceHistory and a
// reply whose price does not parse leave the spot groups without a price
// (an error naming the cause), are logged and recorded as events once,
// and leave the on-demand group and the refresh unharmed.
func TestSpotPriceFailuresAreNoPrice(t *testing.T) {
	e := spotEnv(t)
	e.srv.SetSpotPrice(awstest.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: "0.0350", Time: e.clock.Now().Add(-time.Hour)})
	e.srv.SetSpotPrice(awstest.SpotPrice{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: "0.07O", Time: e.clock.Now().Add(-time.Hour)})
	e.srv.FailRequests("DescribeSpotPriceHistory", 1, awstest.APIError{HTTPStatus: http.StatusForbidden, Code: "UnauthorizedOperation",
		Message: "You are not authorized to perform this operation."})
	events := &eventLog{}
	c := e.cloud(Config{AutoDiscovery: discovery(), Prices: spotTestTable}, events)
	m, err := c.Pricing()
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	// The types are read in sorted order: m5.large (denied), then
	// m5.xlarge (malformed).
	for group, cause := range map[string]string{"spot-mixed": "UnauthorizedOperation",
		"spot-lt": `spot price "0.07O" of m5.xlarge in us-east-1a is not a positive number`} {
		got, err := cloudprovider.GroupNodePrice(m, group, nil, now, now.Add(time.Hour))
		if err == nil || !strings.Contains(err.Error(), cause) {
			t.Errorf("price of %s = %v, %v; want an error containing %q\nlog:\n%s", group, got, err, cause, e.log)
		}
	}
	if got, err := cloudprovider.GroupNodePrice(m, "on-demand", nil, now, now.Add(time.Hour)); err != nil || got != 0.192 {
		t.Errorf("price of on-demand = %v, %v; want 0.192", got, err)
	}
	ev := events.all()
	if len(ev) != 2 || ev[0].reason != EventReasonSpotPriceUnknown || ev[1].reason != EventReasonSpotPriceUnknown ||
		ev[0].typ != corev1.EventTypeWarning || !strings.Contains(ev[0].message, "m5.large") || !strings.Contains(ev[1].message, "m5.xlarge") {
		t.Errorf("events %+v, want a SpotPriceUnknown warning for m5.large and one for m5.xlarge", ev)
	}
	if n := strings.Count(e.log.String(), "Could not read spot prices"); n != 2 {
		t.Errorf("%d log lines about spot prices, want 2:\n%s", n, e.log)
	}
	// After spotRetry both are read again: m5.large now answers, the
	// same malformed m5.xlarge price is not reported again.
	e.clock.Step(spotRetry)
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatalf("refresh with the malformed spot price still served: %v", err)
	}
	now = e.clock.Now()
	if got, err := cloudprovider.GroupNodePrice(m, "spot-mixed", nil, now, now.Add(time.Hour)); err != nil || got != 0.035 {
		t.Errorf("price of spot-mixed once EC2 answers = %v, %v; want 0.035\nlog:\n%s", got, err, e.log)
	}
	if _, err := cloudprovider.GroupNodePrice(m, "spot-lt", nil, now, now.Add(time.Hour)); err == nil {
		t.Error("spot-lt priced while its spot price is still malformed")
	}
	if len(events.all()) != 2 {
		t.Errorf("the same failure reported again: %+v", events.all())
	}
	e.srv.SetSpotPrice(awstest.SpotPrice{InstanceType: "m5.xlarge", Zone: "us-east-1a", Price: "0.0700"})
	e.clock.Step(spotRetry)
	if err := c.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	now = e.clock.Now()
	if got, err := cloudprovider.GroupNodePrice(m, "spot-lt", nil, now, now.Add(time.Hour)); err != nil || got != 0.07 {
		t.Errorf("price of spot-lt once EC2 answers well = %v, %v; want 0.07\nlog:\n%s", got, err, e.log)
	}
}
