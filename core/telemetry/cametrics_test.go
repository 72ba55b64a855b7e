package telemetry

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// caFamily is a family of Cluster Autoscaler's metrics.go as CA defines it.
type caFamily struct {
	typ    dto.MetricType
	labels []string
}

// caFamilies are the families tidal exposes, by name, with CA's type and
// label names; caPerNodeGroup those only --emit-per-nodegroup-metrics adds.
var (
	caFamilies = map[string]caFamily{
		"cluster_autoscaler_cluster_safe_to_autoscale":            {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_nodes_count":                          {dto.MetricType_GAUGE, []string{"state"}},
		"cluster_autoscaler_node_groups_count":                    {dto.MetricType_GAUGE, []string{"node_group_type"}},
		"cluster_autoscaler_unschedulable_pods_count":             {dto.MetricType_GAUGE, []string{"type"}},
		"cluster_autoscaler_max_nodes_count":                      {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_cluster_cpu_current_cores":            {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_cpu_limits_cores":                     {dto.MetricType_GAUGE, []string{"direction"}},
		"cluster_autoscaler_cluster_memory_current_bytes":         {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_memory_limits_bytes":                  {dto.MetricType_GAUGE, []string{"direction"}},
		"cluster_autoscaler_last_activity":                        {dto.MetricType_GAUGE, []string{"activity"}},
		"cluster_autoscaler_function_duration_seconds":            {dto.MetricType_HISTOGRAM, []string{"function"}},
		"cluster_autoscaler_function_duration_quantile_seconds":   {dto.MetricType_SUMMARY, []string{"function"}},
		"cluster_autoscaler_pending_node_deletions":               {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_errors_total":                         {dto.MetricType_COUNTER, []string{"type"}},
		"cluster_autoscaler_scaled_up_nodes_total":                {dto.MetricType_COUNTER, nil},
		"cluster_autoscaler_failed_scale_ups_total":               {dto.MetricType_COUNTER, []string{"reason"}},
		"cluster_autoscaler_scaled_down_nodes_total":              {dto.MetricType_COUNTER, []string{"reason"}},
		"cluster_autoscaler_evicted_pods_total":                   {dto.MetricType_COUNTER, []string{"eviction_result"}},
		"cluster_autoscaler_unneeded_nodes_count":                 {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_unremovable_nodes_count":              {dto.MetricType_GAUGE, []string{"reason"}},
		"cluster_autoscaler_scale_down_in_cooldown":               {dto.MetricType_GAUGE, nil},
		"cluster_autoscaler_old_unregistered_nodes_removed_count": {dto.MetricType_COUNTER, nil},
	}
	caPerNodeGroup = map[string]caFamily{
		"cluster_autoscaler_node_group_min_count":      {dto.MetricType_GAUGE, []string{"node_group"}},
		"cluster_autoscaler_node_group_max_count":      {dto.MetricType_GAUGE, []string{"node_group"}},
		"cluster_autoscaler_node_group_target_count":   {dto.MetricType_GAUGE, []string{"node_group"}},
		"cluster_autoscaler_node_group_healthiness":    {dto.MetricType_GAUGE, []string{"node_group"}},
		"cluster_autoscaler_node_group_backoff_status": {dto.MetricType_GAUGE, []string{"node_group", "reason"}},
	}
)

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// touch gives each vector of cs one series with as many label values as
// the table says the family has; a wrong count is an error.
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

// Tidal's CA families have CA's names, types and label names: all of the
// table and nothing else under CA's prefix, the per node group gauges only
// when asked for.
func TestCAMetricFamiliesMatchCA(t *testing.T) {
	for _, perNodeGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("perNodeGroup=%v", perNodeGroup), func(t *testing.T) {
			want := maps.Clone(caFamilies)
			if perNodeGroup {
				maps.Copy(want, caPerNodeGroup)
			}
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
					t.Errorf("%s is exposed but not in the table of CA's families", f.GetName())
					continue
				}
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
			}
			for name := range want {
				if !got[name] {
					t.Errorf("%s is not exposed", name)
				}
			}
		})
	}
}

// function_duration_seconds has CA's buckets: 10 ms growing by half, 30 of
// them (the last about 21 minutes).
func TestCAFunctionDurationBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, false)
	m.Observe("main", 0)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "cluster_autoscaler_function_duration_seconds" {
			continue
		}
		b := f.GetMetric()[0].GetHistogram().GetBucket()
		if len(b) != 30 || b[0].GetUpperBound() != 0.01 || b[1].GetUpperBound() != 0.015 || int(b[29].GetUpperBound()) != 1278 {
			t.Fatalf("buckets %v, want 0.01, 0.015, ... 1278.34 (30)", b)
		}
		return
	}
	t.Fatal("no cluster_autoscaler_function_duration_seconds")
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
