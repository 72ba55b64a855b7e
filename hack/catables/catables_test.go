package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeCA writes a small module shaped like CA's: files by path.
func fakeCA(t *testing.T, files map[string]string) source {
	t.Helper()
	root := t.TempDir()
	for path, text := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dirSource{root: root, version: "test"}
}

const fakeConfig = `package config

import "time"

const (
	DefaultScanInterval = 10 * time.Second
	DefaultMaxClusterCores = 5000 * 64
	DefaultRatio = 0.05
	SchedulerConfigFileFlag = "scheduler-config-file"
)
`

const fakeFlags = `package flags

import (
	"flag"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/autoscaler/cluster-autoscaler/config"
	cloudBuilder "k8s.io/autoscaler/cluster-autoscaler/cloudprovider/builder"
	"k8s.io/client-go/rest"
)

type MultiStringFlag []string

func (f *MultiStringFlag) String() string { return "" }
func (f *MultiStringFlag) Set(v string) error { return nil }

func multiStringFlag(name string, usage string) *MultiStringFlag {
	value := new(MultiStringFlag)
	flag.Var(value, name, usage)
	return value
}

var (
	scan     = flag.Duration("scan-interval", config.DefaultScanInterval, "")
	hour     = flag.Duration("blocking", time.Hour, "")
	zero     = flag.Duration("zero", 0*time.Second, "")
	cores    = flag.String("cores-total", minMax(0, config.DefaultMaxClusterCores), "")
	ratio    = flag.Float64("ratio", config.DefaultRatio, "")
	qps      = flag.Float64("kube-client-qps", float64(rest.DefaultQPS), "")
	burst    = flag.Int("kube-client-burst", rest.DefaultBurst, "")
	cutoff   = flag.Int("cutoff", -10, "")
	sched    = flag.String(config.SchedulerConfigFileFlag, "", "")
	on       = flag.Bool("on", true, "")
	nodes    = multiStringFlag("nodes", "")
	names    = pflag.StringSlice("names", []string{}, "")
	provider = flag.String("cloud-provider", cloudBuilder.DefaultCloudProvider(), "")
)

func minMax(min, max int64) string {
	return fmt.Sprintf("%v:%v", min, max)
}
`

// The generator reads each flag's name, type and default as CA's --help
// shows them, evaluating constants across CA's packages and other modules'.
func TestFlagsOf(t *testing.T) {
	l := newLoader(fakeCA(t, map[string]string{"config/config.go": fakeConfig, "config/flags/flags.go": fakeFlags}))
	flags, err := flagsOf(l)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range flags {
		got = append(got, f.Name+" "+f.Type+" "+f.Default)
	}
	slices.Sort(got)
	want := []string{
		"blocking duration 1h0m0s", "cloud-provider string ", "cores-total string 0:320000", "cutoff int -10",
		"kube-client-burst int 10", "kube-client-qps float64 5", "names stringSlice []", "nodes multiString []",
		"on bool true", "ratio float64 0.05", "scan-interval duration 10s", "scheduler-config-file string ",
		"zero duration 0s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("flags\n got %q\nwant %q", got, want)
	}
}

// A default the generator cannot evaluate stops it, naming the flag.
func TestFlagsOfUnknownConstant(t *testing.T) {
	l := newLoader(fakeCA(t, map[string]string{"config/flags/flags.go": `package flags

import (
	"flag"
	"k8s.io/some/module"
)

var x = flag.Int("x", module.Value, "")
`}))
	_, err := flagsOf(l)
	if err == nil || !strings.Contains(err.Error(), "--x") || !strings.Contains(err.Error(), "module.Value") {
		t.Fatalf("error %v, want one naming --x and module.Value", err)
	}
}

const fakeMetrics = `package metrics

import k8smetrics "k8s.io/component-base/metrics"

const caNamespace = "cluster_autoscaler"

type caMetrics struct{}

func newCaMetrics() *caMetrics {
	return &caMetrics{
		a: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{Namespace: caNamespace, Name: "a_total", Help: "x", DeprecatedVersion: "1.36.0"}, []string{"reason", "gpu_name"}),
		b: k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{Namespace: caNamespace, Name: "b_seconds", Buckets: k8smetrics.ExponentialBuckets(1, 2, 3)}, []string{"f"}),
		c: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{Namespace: caNamespace, Name: "c"}),
		d: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{Namespace: caNamespace, Name: "not_registered"}),
	}
}

func (m *caMetrics) RegisterAll(emitPerNodeGroupMetrics bool) {
	m.mustRegister(m.a)
	m.mustRegister(m.b)
	if emitPerNodeGroupMetrics {
		m.mustRegister(m.c)
	}
}
`

// The generator reads the families RegisterAll registers, with labels,
// buckets and the per node group condition.
func TestMetricsOf(t *testing.T) {
	l := newLoader(fakeCA(t, map[string]string{"metrics/metrics.go": fakeMetrics}))
	metrics, err := metricsOf(l)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(metricsText("test", metrics)))
	want := "cluster_autoscaler_a_total\tcounter\treason,gpu_name\talways\t1.36.0\t-\n" +
		"cluster_autoscaler_b_seconds\thistogram\tf\talways\t-\t1,2,4\n" +
		"cluster_autoscaler_c\tgauge\t-\tper-node-group\t-\t-"
	if got = got[strings.LastIndex(got, "buckets.\n")+len("buckets.\n"):]; got != want {
		t.Errorf("extract\n%s\nwant\n%s", got, want)
	}
}
