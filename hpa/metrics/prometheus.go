package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// DefaultPrometheusTimeout bounds one query.
const DefaultPrometheusTimeout = 10 * time.Second

// Prometheus reads External metrics named "prometheus" from a Prometheus
// server: the selector's "query" label is an instant PromQL query whose
// samples become the metric's series (so an AverageValue or Value target
// applies to their sum). A query that fails, returns no sample, a range
// vector or a non-finite value makes the metric invalid.
type Prometheus struct {
	api     promv1.API
	timeout time.Duration
}

// NewPrometheus returns a source querying the server at address
// (http://host:port, optionally with a path prefix). rt may be nil.
func NewPrometheus(address string, rt http.RoundTripper) (*Prometheus, error) {
	client, err := promapi.NewClient(promapi.Config{Address: address, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", address, err)
	}
	return &Prometheus{api: promv1.NewAPI(client), timeout: DefaultPrometheusTimeout}, nil
}

// Fetch runs the metric's query.
func (p *Prometheus) Fetch(ctx context.Context, req Request) hpa.MetricData {
	q, ok := PromQL(req.Metric)
	if !ok {
		return failed(fmt.Errorf("metric is not a Prometheus query: want an External metric named %q with a selector label %q",
			PrometheusMetricName, PrometheusQueryLabel))
	}
	values, ts, err := p.Query(ctx, q)
	if err != nil {
		return failed(err)
	}
	return hpa.MetricData{ExternalValues: values, Timestamp: ts}
}

// Query runs an instant query at the server's current time and returns its
// values in milli-units with the samples' time.
func (p *Prometheus) Query(ctx context.Context, query string) ([]int64, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	result, _, err := p.api.Query(ctx, query, time.Time{})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("prometheus query %q: %w", query, err)
	}
	values, ts, err := promValues(result)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("prometheus query %q: %w", query, err)
	}
	return values, ts, nil
}

// promValues converts an instant query's result.
func promValues(v model.Value) ([]int64, time.Time, error) {
	switch r := v.(type) {
	case *model.Scalar:
		m, err := toMilli(float64(r.Value))
		return []int64{m}, r.Timestamp.Time(), err
	case model.Vector:
		if len(r) == 0 {
			return nil, time.Time{}, errors.New("no samples")
		}
		out := make([]int64, len(r))
		var ts time.Time
		for i, s := range r {
			m, err := toMilli(float64(s.Value))
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("series %s: %w", s.Metric, err)
			}
			out[i] = m
			if t := s.Timestamp.Time(); t.After(ts) {
				ts = t
			}
		}
		return out, ts, nil
	case nil:
		return nil, time.Time{}, errors.New("no result")
	}
	return nil, time.Time{}, fmt.Errorf("result is a %s, want an instant vector or a scalar", v.Type())
}

// toMilli converts a sample to milli-units.
func toMilli(f float64) (int64, error) {
	m := math.Round(f * 1000)
	if math.IsNaN(m) || m >= math.MaxInt64 || m <= math.MinInt64 {
		return 0, fmt.Errorf("value %v is not a finite number in range", f)
	}
	return int64(m), nil
}
