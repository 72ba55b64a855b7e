package telemetry

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tidal-autoscaler/tidal/config"
)

// caFamily is a family of Cluster Autoscaler's metrics.go as the pinned
// release defines it.
type caFamily struct {
	typ          dto.MetricType
	labels       []string // sorted
	perNodeGroup bool
	buckets      []float64
}

var caTypes = map[string]dto.MetricType{"gauge": dto.MetricType_GAUGE, "counter": dto.MetricType_COUNTER,
	"histogram": dto.MetricType_HISTOGRAM, "summary": dto.MetricType_SUMMARY}

// caReleaseFamilies reads the extract of the pinned CA release's families
// hack/catables wrote (make ca-tables).
func caReleaseFamilies(t *testing.T) map[string]caFamily {
	t.Helper()
	data, err := os.ReadFile("testdata/ca-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), config.CARelease+" ") {
		t.Fatalf("testdata/ca-metrics.txt is not of %s, the release of tidal's flag table: regenerate both with make ca-tables", config.CARelease)
	}
	out := map[string]caFamily{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			t.Fatalf("testdata/ca-metrics.txt:%d: %d fields, want 6", i+1, len(f))
		}
		fam := caFamily{typ: caTypes[f[1]], perNodeGroup: f[3] == "per-node-group"}
		if f[2] != "-" {
			fam.labels = strings.Split(f[2], ",")
			sort.Strings(fam.labels)
		}
		if f[5] != "-" {
			for _, b := range strings.Split(f[5], ",") {
				x, err := strconv.ParseFloat(b, 64)
				if err != nil {
					t.Fatalf("testdata/ca-metrics.txt:%d: bucket %s: %v", i+1, b, err)
				}
				fam.buckets = append(fam.buckets, x)
			}
		}
		out[f[0]] = fam
	}
	return out
}

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// touch gives each vector of cs one series with as many label values as
// the release's family has; a wrong count is an error.
func touch(cs []prometheus.Collector, want map[string]caFamily) error {
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		m := descName.FindStringSubmatch((<-ch).String())
		if m == nil {
			return fmt.Errorf("no name in the description of %T", c)
		}
		values := make([]string, len(want[m[1]].labels))
		var err error
		switch v := c.(type) {
		case *prometheus.GaugeVec:
			_, err = v.GetMetricWithLabelValues(values...)
		case *prometheus.CounterVec:
			_, err = v.GetMetricWithLabelValues(values...)
		case *prometheus.HistogramVec:
			_, err = v.GetMetricWithLabelValues(values...)
		case *prometheus.SummaryVec:
			_, err = v.GetMetricWithLabelValues(values...)
		}
		if err != nil {
			return fmt.Errorf("%s with labels %v: %w", m[1], want[m[1]].labels, err)
		}
	}
	return nil
}

// Every family of the pinned CA release's metrics.go is registered with
// CA's name, type, label names and buckets, and nothing else under CA's
// prefix; the per node group gauges only when asked for. A release that
// adds or changes a family fails here after make ca-tables.
func TestCAMetricFamiliesMatchCA(t *testing.T) {
	release := caReleaseFamilies(t)
	for _, perNodeGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("perNodeGroup=%v", perNodeGroup), func(t *testing.T) {
			want := maps.Clone(release)
			maps.DeleteFunc(want, func(_ string, f caFamily) bool { return f.perNodeGroup && !perNodeGroup })
			reg := prometheus.NewPedanticRegistry()
			m := NewMetrics(reg, perNodeGroup)
			if err := touch(m.CA.collectors(), want); err != nil {
				t.Fatal(err)
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, f := range families {
				if !strings.HasPrefix(f.GetName(), caNamespace+"_") {
					continue
				}
				got[f.GetName()] = true
				w, ok := want[f.GetName()]
				if !ok {
					t.Errorf("%s is exposed but is not a family of %s (or only with --emit-per-nodegroup-metrics)", f.GetName(), config.CARelease)
					continue
				}
				checkFamily(t, f, w)
			}
			for name := range want {
				if !got[name] {
					t.Errorf("%s's %s is not exposed", config.CARelease, name)
				}
			}
		})
	}
}

func checkFamily(t *testing.T, f *dto.MetricFamily, w caFamily) {
	t.Helper()
	if f.GetType() != w.typ {
		t.Errorf("%s is a %v, CA's is a %v", f.GetName(), f.GetType(), w.typ)
	}
	var labels []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		labels = append(labels, l.GetName())
	}
	sort.Strings(labels)
	if !slices.Equal(labels, w.labels) {
		t.Errorf("%s has labels %v, CA's has %v", f.GetName(), labels, w.labels)
	}
	if w.typ != dto.MetricType_HISTOGRAM {
		return
	}
	var buckets []float64
	for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
		buckets = append(buckets, b.GetUpperBound())
	}
	if !slices.Equal(buckets, w.buckets) {
		t.Errorf("%s has buckets %v,\nCA's are %v", f.GetName(), buckets, w.buckets)
	}
}

// A phase CA names otherwise is observed under CA's name in CA's family,
// under tidal's in tidal's.
func TestCAFunctionNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, false)
	for _, f := range []string{"main", "scaleDown:plan", "scaleUp:filterSchedulable"} {
		m.Observe(f, time.Second)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "function" {
					got[f.GetName()] = append(got[f.GetName()], l.GetValue())
				}
			}
		}
	}
	for family, want := range map[string][]string{
		"cluster_autoscaler_function_duration_seconds":          {"filterOutSchedulable", "findUnneeded", "main"},
		"cluster_autoscaler_function_duration_quantile_seconds": {"filterOutSchedulable", "findUnneeded", "main"},
		"tidal_function_duration_seconds":                       {"main", "scaleDown:plan", "scaleUp:filterSchedulable"},
	} {
		slices.Sort(got[family])
		if !slices.Equal(got[family], want) {
			t.Errorf("%s has functions %v, want %v", family, got[family], want)
		}
	}
}

// A failed scale-up counts once in failed_scale_ups_total and by its nodes
// in failed_node_creations_total, under CA's reason, as CA's observer does.
func TestCAFailedNodeCreations(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), false)
	m.FailedScaleUp("g", "timeout", 3)
	m.FailedScaleUp("g", "OutOfCapacity", 2)
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(m.CA.FailedNodeCreations.WithLabelValues("timeout")), 3, "failed_node_creations_total{reason=timeout}"},
		{testutil.ToFloat64(m.CA.FailedNodeCreations.WithLabelValues("cloudProviderError")), 2, "failed_node_creations_total{reason=cloudProviderError}"},
		{testutil.ToFloat64(m.CA.FailedScaleUpCount.WithLabelValues(withGPU("timeout")...)), 1, "failed_scale_ups_total{reason=timeout}"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
