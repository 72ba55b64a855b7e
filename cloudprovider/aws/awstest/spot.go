package awstest

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// ProductLinux is the product description of Linux spot prices.
const ProductLinux = "Linux/UNIX"

// SpotPrice is one record of the spot price history.
type SpotPrice struct {
	InstanceType string
	Zone         string
	// Product is the product description; empty means ProductLinux.
	Product string
	// Price is written as given, so that a test can serve one that does
	// not parse.
	Price string
	// Time is when the price took effect; zero means when it was set.
	Time time.Time
}

// SetSpotPrice adds a record to the spot price history that
// DescribeSpotPriceHistory answers from.
func (s *Server) SetSpotPrice(p SpotPrice) {
	if p.Product == "" {
		p.Product = ProductLinux
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Time.IsZero() {
		p.Time = s.clock.Now()
	}
	s.spotPrices = append(s.spotPrices, p)
}

type xmlSpotPrice struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
}

// spotQuery is what a DescribeSpotPriceHistory request asks for.
type spotQuery struct {
	types, products, zones []string
	start, end             time.Time
}

// matches reports whether record p is in the query's answer: its type,
// product and zone are asked for (or none is named), and it is in effect
// at some time in [start, end] (the last record before start included, as
// AWS answers the price in effect at the start time).
func (q spotQuery) matches(p SpotPrice, all []SpotPrice) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	if !in(q.types, p.InstanceType) || !in(q.products, p.Product) || !in(q.zones, p.Zone) || p.Time.After(q.end) {
		return false
	}
	if !p.Time.Before(q.start) {
		return true
	}
	for _, o := range all {
		// A later record of the same series before start replaces p.
		if o.InstanceType == p.InstanceType && o.Zone == p.Zone && o.Product == p.Product &&
			o.Time.After(p.Time) && !o.Time.After(q.start) {
			return false
		}
	}
	return true
}

func (s *Server) describeSpotPriceHistory(w http.ResponseWriter, params url.Values) *APIError {
	q, err := s.spotQuery(params)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var found []SpotPrice
	for _, p := range s.spotPrices {
		if q.matches(p, s.spotPrices) {
			found = append(found, p)
		}
	}
	s.mu.Unlock()
	// Newest first, as AWS lists them.
	slices.SortStableFunc(found, func(a, b SpotPrice) int { return b.Time.Compare(a.Time) })
	from, to, next, err := s.page(len(found), params, "MaxResults", 1000)
	if err != nil {
		return err
	}
	out := make([]xmlSpotPrice, 0, to-from)
	for _, p := range found[from:to] {
		out = append(out, xmlSpotPrice{InstanceType: p.InstanceType, ProductDescription: p.Product, SpotPrice: p.Price,
			Timestamp: timestamp(p.Time), AvailabilityZone: p.Zone})
	}
	writeEC2Result(w, "DescribeSpotPriceHistory", struct {
		Prices    []xmlSpotPrice `xml:"spotPriceHistorySet>item"`
		NextToken string         `xml:"nextToken"`
	}{out, next})
	return nil
}

// spotQuery reads the request: InstanceType.N, ProductDescription.N,
// AvailabilityZone, StartTime, EndTime, and the filters instance-type,
// product-description and availability-zone (Filter.N.Name,
// Filter.N.Value.M).
func (s *Server) spotQuery(params url.Values) (spotQuery, *APIError) {
	now := s.clock.Now()
	q := spotQuery{types: listParam(params, "InstanceType"), products: listParam(params, "ProductDescription"), start: now, end: now}
	if z := params.Get("AvailabilityZone"); z != "" {
		q.zones = []string{z}
	}
	for _, f := range []struct {
		key string
		to  *time.Time
	}{{"StartTime", &q.start}, {"EndTime", &q.end}} {
		if v := params.Get(f.key); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return q, ec2Error(http.StatusBadRequest, "InvalidParameterValue", "%s %q is not a time", f.key, v)
			}
			*f.to = t
		}
	}
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		name := params.Get(p + ".Name")
		if name == "" {
			break
		}
		values := listParam(params, p+".Value")
		switch name {
		case "instance-type":
			q.types = append(q.types, values...)
		case "product-description":
			q.products = append(q.products, values...)
		case "availability-zone":
			q.zones = append(q.zones, values...)
		default:
			return q, ec2Error(http.StatusBadRequest, "InvalidParameterValue", "The filter '%s' is invalid", name)
		}
	}
	return q, nil
}
