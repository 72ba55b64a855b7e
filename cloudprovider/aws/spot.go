package aws

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
)

const (
	// DefaultSpotPriceTTL is how long a spot price read is used before it
	// is read again (Cluster Autoscaler and Karpenter read them about
	// hourly too).
	DefaultSpotPriceTTL = time.Hour
	// spotRetry is how long after a failed read of a type's spot prices
	// the next is tried.
	spotRetry = time.Minute
)

// spotProducts are the product descriptions of Linux spot prices: EC2
// lists prices of instances in a VPC under either.
var spotProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// onDemandShare is the share of on-demand instances among those the group
// launches next: 1 when all are on-demand, 0 when all are spot. A mixed
// instances policy says it by its instances distribution (on-demand up to
// the base capacity, then the percentage above it; AWS's defaults 0 and
// 100); otherwise the launch template's or launch configuration's market
// (spec.Spot).
func onDemandShare(g *astypes.AutoScalingGroup, spec launchSpec) float64 {
	if p := g.MixedInstancesPolicy; p != nil {
		d := p.InstancesDistribution
		if d == nil {
			return 1
		}
		if aws.ToInt32(g.DesiredCapacity) < aws.ToInt32(d.OnDemandBaseCapacity) {
			return 1
		}
		pct := int32(100)
		if d.OnDemandPercentageAboveBaseCapacity != nil {
			pct = min(max(*d.OnDemandPercentageAboveBaseCapacity, 0), 100)
		}
		return float64(pct) / 100
	}
	if spec.Spot {
		return 0
	}
	return 1
}

// spotReading is one zone's spot price of an instance type.
type spotReading struct {
	price float64
	read  time.Time
}

type spotKey struct{ instanceType, zone string }

// spotPrices caches spot prices by instance type and zone. A price is
// read again after ttl and used up to 2 × ttl after it was read; a failed
// read keeps the last good price for that long and is tried again after
// spotRetry. Nothing that failed to read or parse is ever a price.
type spotPrices struct {
	ttl time.Duration
	mu  sync.Mutex
	got map[spotKey]spotReading
	// failed is the last error of a type, and when, until a read succeeds.
	failed map[string]spotFailure
}

type spotFailure struct {
	err error
	at  time.Time
}

// due lists the instance types, of want (type → zones), with a zone whose
// price is missing or older than ttl and whose last failure, if any, is
// older than spotRetry; sorted.
func (s *spotPrices) due(want map[string][]string, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for typ, zones := range want {
		if f, ok := s.failed[typ]; ok && now.Sub(f.at) < spotRetry {
			continue
		}
		for _, z := range zones {
			r, ok := s.got[spotKey{typ, z}]
			if !ok || now.Sub(r.read) >= s.ttl {
				out = append(out, typ)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// read asks EC2 for the spot prices of typ in zones, following NextToken,
// and keeps them; the error says what was wrong with the reply.
func (s *spotPrices) read(ctx context.Context, api EC2API, typ string, zones []string, now time.Time) error {
	in := &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{ec2types.InstanceType(typ)},
		ProductDescriptions: spotProducts,
		StartTime:           aws.Time(now),
		Filters:             []ec2types.Filter{{Name: aws.String("availability-zone"), Values: zones}},
	}
	var records []ec2types.SpotPrice
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(api, in)
	err := func() error {
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("DescribeSpotPriceHistory of %s in %v: %w", typ, zones, err)
			}
			records = append(records, out.SpotPriceHistory...)
		}
		return nil
	}()
	var prices map[string]float64
	if err == nil {
		prices, err = parseSpotPrices(records, typ, zones)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.failed == nil {
			s.failed = map[string]spotFailure{}
		}
		s.failed[typ] = spotFailure{err: err, at: now}
		return err
	}
	delete(s.failed, typ)
	if s.got == nil {
		s.got = map[spotKey]spotReading{}
	}
	for z, p := range prices {
		s.got[spotKey{typ, z}] = spotReading{price: p, read: now}
	}
	return nil
}

// parseSpotPrices takes the newest price of typ in each of zones from a
// DescribeSpotPriceHistory reply. A record of typ in one of zones whose
// price is not a positive number, or that has no time, makes the whole
// reply an error; so does a reply with no price in any of the zones. A zone
// without a record has no spot offering of typ and is left out.
func parseSpotPrices(records []ec2types.SpotPrice, typ string, zones []string) (map[string]float64, error) {
	newest := map[string]time.Time{}
	out := map[string]float64{}
	for _, r := range records {
		zone := aws.ToString(r.AvailabilityZone)
		if string(r.InstanceType) != typ || !slices.Contains(zones, zone) {
			continue
		}
		raw := aws.ToString(r.SpotPrice)
		p, err := strconv.ParseFloat(raw, 64)
		if err != nil || !(p > 0) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("DescribeSpotPriceHistory: spot price %q of %s in %s is not a positive number", raw, typ, zone)
		}
		if r.Timestamp == nil {
			return nil, fmt.Errorf("DescribeSpotPriceHistory: spot price of %s in %s has no timestamp", typ, zone)
		}
		if t := *r.Timestamp; newest[zone].IsZero() || t.After(newest[zone]) {
			newest[zone], out[zone] = t, p
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("DescribeSpotPriceHistory: no spot price of %s in %v", typ, zones)
	}
	return out, nil
}

// price is the hourly spot price of typ in the dearest of zones that has
// one read within 2 × ttl (the zone a new instance lands in is not known;
// the dearest does not overstate a saving). Without any, the error says
// why, with the last failed read.
func (s *spotPrices) price(typ string, zones []string, now time.Time) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, found := 0.0, false
	for _, z := range zones {
		r, ok := s.got[spotKey{typ, z}]
		if ok && now.Sub(r.read) < 2*s.ttl {
			best, found = max(best, r.price), true
		}
	}
	if found {
		return best, nil
	}
	err := errors.New("not read yet")
	if f, ok := s.failed[typ]; ok {
		err = f.err
	}
	return 0, fmt.Errorf("no spot price of %s in %v read within %v: %w", typ, zones, 2*s.ttl, err)
}

// EventReasonSpotPriceUnknown: the spot prices of an instance type could
// not be read or parsed; groups launching it on spot have no price.
const EventReasonSpotPriceUnknown = "SpotPriceUnknown"

// refreshSpotPrices reads the spot prices that are due, of the types spot
// groups launch and run, in their zones; only with pricing enabled. A
// failed read is logged and recorded as an event, once per distinct
// error; the groups' refresh does not fail with it.
func (c *Cloud) refreshSpotPrices(ctx context.Context, results map[string]*described) {
	if len(c.cfg.Prices) == 0 {
		return
	}
	want := map[string][]string{}
	for _, d := range results {
		if d.specErr != nil || d.onDemand >= 1 {
			continue
		}
		types := []string{d.spec.InstanceType}
		for _, in := range d.asg.Instances {
			types = append(types, aws.ToString(in.InstanceType))
		}
		for _, t := range types {
			if t != "" {
				want[t] = union(want[t], d.asg.AvailabilityZones)
			}
		}
	}
	logger := c.logger()
	for _, typ := range c.spot.due(want, c.clock.Now()) {
		err := c.spot.read(ctx, c.api.EC2, typ, want[typ], c.clock.Now())
		c.mu.Lock()
		key := ""
		if err != nil {
			key = errorKey(err)
		}
		changed := c.spotLogged[typ] != key
		c.spotLogged[typ] = key
		c.mu.Unlock()
		switch {
		case err != nil && changed:
			logger.Error(err, "Could not read spot prices; spot groups launching this type have no price until a read succeeds", "instanceType", typ, "zones", want[typ])
			c.events(corev1.EventTypeWarning, EventReasonSpotPriceUnknown, fmt.Sprintf("spot prices of %s: %v", typ, err))
		case err == nil:
			logger.V(2).Info("Read spot prices", "instanceType", typ, "zones", want[typ])
		}
	}
}

// union is a sorted list of the strings in a and b.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
