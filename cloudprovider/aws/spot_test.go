package aws

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

var spotT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func spotRecord(typ, zone, price string, at time.Time) ec2types.SpotPrice {
	return ec2types.SpotPrice{InstanceType: ec2types.InstanceType(typ), AvailabilityZone: aws.String(zone),
		ProductDescription: "Linux/UNIX", SpotPrice: aws.String(price), Timestamp: aws.Time(at)}
}

func TestParseSpotPrices(t *testing.T) {
	zones := []string{"us-east-1a", "us-east-1b"}
	tests := []struct {
		name    string
		records []ec2types.SpotPrice
		want    map[string]float64
		wantErr string
	}{
		{name: "newest per zone, other types and zones ignored", records: []ec2types.SpotPrice{
			spotRecord("m5.xlarge", "us-east-1a", "0.0700", spotT0.Add(-2*time.Hour)),
			spotRecord("m5.xlarge", "us-east-1a", "0.0650", spotT0.Add(-time.Hour)),
			spotRecord("m5.xlarge", "us-east-1b", "0.0800", spotT0.Add(-3*time.Hour)),
			spotRecord("m5.large", "us-east-1a", "0.0300", spotT0),
			spotRecord("m5.xlarge", "us-east-1c", "0.0100", spotT0),
		}, want: map[string]float64{"us-east-1a": 0.065, "us-east-1b": 0.08}},
		{name: "a zone without an offering is left out", records: []ec2types.SpotPrice{
			spotRecord("m5.xlarge", "us-east-1b", "0.08", spotT0),
		}, want: map[string]float64{"us-east-1b": 0.08}},
		{name: "no record", wantErr: "no spot price of m5.xlarge"},
		{name: "price that is not a number", records: []ec2types.SpotPrice{
			spotRecord("m5.xlarge", "us-east-1a", "0.07", spotT0), spotRecord("m5.xlarge", "us-east-1b", "cheap", spotT0),
		}, wantErr: `spot price "cheap" of m5.xlarge in us-east-1b is not a positive number`},
		{name: "zero price", records: []ec2types.SpotPrice{spotRecord("m5.xlarge", "us-east-1a", "0", spotT0)},
			wantErr: `spot price "0"`},
		{name: "negative price", records: []ec2types.SpotPrice{spotRecord("m5.xlarge", "us-east-1a", "-0.1", spotT0)},
			wantErr: `spot price "-0.1"`},
		{name: "NaN", records: []ec2types.SpotPrice{spotRecord("m5.xlarge", "us-east-1a", "NaN", spotT0)},
			wantErr: `spot price "NaN"`},
		{name: "empty price", records: []ec2types.SpotPrice{{InstanceType: "m5.xlarge", AvailabilityZone: aws.String("us-east-1a"), Timestamp: aws.Time(spotT0)}},
			wantErr: `spot price ""`},
		{name: "no timestamp", records: []ec2types.SpotPrice{{InstanceType: "m5.xlarge", AvailabilityZone: aws.String("us-east-1a"), SpotPrice: aws.String("0.07")}},
			wantErr: "has no timestamp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSpotPrices(tc.records, "m5.xlarge", zones)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for z, p := range tc.want {
				if got[z] != p {
					t.Fatalf("got %v; want %v", got, tc.want)
				}
			}
		})
	}
}

func TestOnDemandShare(t *testing.T) {
	mixed := func(desired, base int32, pct *int32) *astypes.AutoScalingGroup {
		return &astypes.AutoScalingGroup{DesiredCapacity: aws.Int32(desired), MixedInstancesPolicy: &astypes.MixedInstancesPolicy{
			InstancesDistribution: &astypes.InstancesDistribution{OnDemandBaseCapacity: aws.Int32(base), OnDemandPercentageAboveBaseCapacity: pct}}}
	}
	tests := []struct {
		name string
		g    *astypes.AutoScalingGroup
		spec launchSpec
		want float64
	}{
		{"launch template without market options", &astypes.AutoScalingGroup{}, launchSpec{}, 1},
		{"launch template asking for spot", &astypes.AutoScalingGroup{}, launchSpec{Spot: true}, 0},
		{"mixed policy without distribution", &astypes.AutoScalingGroup{MixedInstancesPolicy: &astypes.MixedInstancesPolicy{}}, launchSpec{}, 1},
		{"mixed policy with AWS's default percentage", mixed(3, 0, nil), launchSpec{}, 1},
		{"mixed policy all spot", mixed(3, 0, aws.Int32(0)), launchSpec{}, 0},
		{"mixed policy below its on-demand base", mixed(1, 2, aws.Int32(0)), launchSpec{}, 1},
		{"mixed policy at its on-demand base", mixed(2, 2, aws.Int32(0)), launchSpec{}, 0},
		{"mixed policy a quarter on-demand", mixed(4, 0, aws.Int32(25)), launchSpec{}, 0.25},
	}
	for _, tc := range tests {
		if got := onDemandShare(tc.g, tc.spec); got != tc.want {
			t.Errorf("%s: share %v, want %v", tc.name, got, tc.want)
		}
	}
}

// spotAPI answers DescribeSpotPriceHistory from a list, or with err.
type spotAPI struct {
	EC2API
	records []ec2types.SpotPrice
	err     error
	calls   int
}

func (a *spotAPI) DescribeSpotPriceHistory(_ context.Context, _ *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	a.calls++
	if a.err != nil {
		return nil, a.err
	}
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: a.records}, nil
}

// TestSpotPriceCache reads a type's prices once per TTL, prices the dearest
// zone, keeps the last good price through a failed read for up to twice
// the TTL, retries a failure no sooner than spotRetry, and never turns a
// failure into a price.
func TestSpotPriceCache(t *testing.T) {
	ctx := context.Background()
	zones := []string{"us-east-1a", "us-east-1b"}
	want := map[string][]string{"m5.xlarge": zones}
	api := &spotAPI{records: []ec2types.SpotPrice{
		spotRecord("m5.xlarge", "us-east-1a", "0.06", spotT0), spotRecord("m5.xlarge", "us-east-1b", "0.08", spotT0)}}
	s := &spotPrices{ttl: time.Hour}

	if _, err := s.price("m5.xlarge", zones, spotT0); err == nil || !strings.Contains(err.Error(), "not read yet") {
		t.Fatalf("price before any read: %v; want 'not read yet'", err)
	}
	if due := s.due(want, spotT0); len(due) != 1 || due[0] != "m5.xlarge" {
		t.Fatalf("due before any read: %v", due)
	}
	if err := s.read(ctx, api, "m5.xlarge", zones, spotT0); err != nil {
		t.Fatal(err)
	}
	if p, err := s.price("m5.xlarge", zones, spotT0); err != nil || p != 0.08 {
		t.Fatalf("price = %v, %v; want 0.08 (the dearer zone)", p, err)
	}
	if p, err := s.price("m5.xlarge", zones[:1], spotT0); err != nil || p != 0.06 {
		t.Fatalf("price in us-east-1a = %v, %v; want 0.06", p, err)
	}
	if due := s.due(want, spotT0.Add(59*time.Minute)); len(due) != 0 {
		t.Fatalf("due within the TTL: %v", due)
	}
	if due := s.due(want, spotT0.Add(time.Hour)); len(due) != 1 {
		t.Fatalf("not due after the TTL: %v", due)
	}

	// A failed read keeps the last good price within 2 × TTL.
	api.err = errors.New("UnauthorizedOperation: not allowed to call ec2:DescribeSpotPriceHistory")
	at := spotT0.Add(time.Hour)
	if err := s.read(ctx, api, "m5.xlarge", zones, at); err == nil {
		t.Fatal("failed read returned no error")
	}
	if p, err := s.price("m5.xlarge", zones, at); err != nil || p != 0.08 {
		t.Fatalf("price after a failed read within 2 × TTL = %v, %v; want the last good 0.08", p, err)
	}
	if due := s.due(want, at.Add(spotRetry-time.Second)); len(due) != 0 {
		t.Fatalf("failure retried before spotRetry: %v", due)
	}
	if due := s.due(want, at.Add(spotRetry)); len(due) != 1 {
		t.Fatalf("failure not retried after spotRetry: %v", due)
	}
	// Past 2 × TTL the price is unknown, and the error says why.
	if p, err := s.price("m5.xlarge", zones, spotT0.Add(2*time.Hour)); err == nil || !strings.Contains(err.Error(), "UnauthorizedOperation") {
		t.Fatalf("price past 2 × TTL after failed reads = %v, %v; want an error naming the failure", p, err)
	}

	// A malformed reply is an error and not a price either.
	api.err = nil
	api.records = []ec2types.SpotPrice{spotRecord("m5.xlarge", "us-east-1a", "", spotT0)}
	s2 := &spotPrices{ttl: time.Hour}
	if err := s2.read(ctx, api, "m5.xlarge", zones, spotT0); err == nil {
		t.Fatal("malformed reply read without error")
	}
	if p, err := s2.price("m5.xlarge", zones, spotT0); err == nil || !strings.Contains(err.Error(), "not a positive number") {
		t.Fatalf("price after a malformed reply = %v, %v; want the parse error", p, err)
	}
}
