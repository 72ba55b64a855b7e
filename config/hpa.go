package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/spf13/pflag"
)

// Metric sources accepted by --hpa-metrics-source.
const (
	// MetricsSourceAPI reads the Kubernetes metrics APIs (metrics.k8s.io,
	// custom.metrics.k8s.io, external.metrics.k8s.io).
	MetricsSourceAPI = "api"
	// MetricsSourceSimulated computes metrics from a simulated load
	// (tidal-local's demo; see hpa/metrics.Simulated).
	MetricsSourceSimulated = "simulated"
)

// HPAOptions are the pod loop's flags. The algorithm's settings carry the
// names and defaults of kube-controller-manager's
// --horizontal-pod-autoscaler-* flags.
type HPAOptions struct {
	// Enabled runs the pod loop at all.
	Enabled bool
	// HPAObjects drives autoscaling/v2 HorizontalPodAutoscalers instead of
	// PodAutoscalers.
	HPAObjects bool
	Workers    int
	SyncPeriod time.Duration

	Tolerance                    float64
	DownscaleStabilizationWindow time.Duration
	CPUInitializationPeriod      time.Duration
	InitialReadinessDelay        time.Duration

	MetricsSource string
	// PrometheusURL is the Prometheus server PromQL metrics are read from;
	// empty disables the Prometheus source.
	PrometheusURL string
	// ScaleInDeletionCost sets pod-deletion-cost on a Deployment's or
	// ReplicaSet's replicas before a scale-down, so that those on the
	// nodes scale-down would empty go.
	ScaleInDeletionCost bool
}

// NewHPAOptions returns the defaults.
func NewHPAOptions() HPAOptions {
	return HPAOptions{
		Enabled:                      true,
		Workers:                      5,
		SyncPeriod:                   15 * time.Second,
		Tolerance:                    0.1,
		DownscaleStabilizationWindow: 5 * time.Minute,
		CPUInitializationPeriod:      5 * time.Minute,
		InitialReadinessDelay:        30 * time.Second,
		MetricsSource:                MetricsSourceAPI,
		ScaleInDeletionCost:          true,
	}
}

// AddFlags registers the pod loop's flags. Fields still at their zero value
// (an Options built without NewOptions) get the defaults first.
func (o *HPAOptions) AddFlags(fs *pflag.FlagSet) {
	if *o == (HPAOptions{}) {
		*o = NewHPAOptions()
	}
	fs.BoolVar(&o.Enabled, "hpa", o.Enabled, "Run the pod loop (horizontal pod autoscaling).")
	fs.BoolVar(&o.HPAObjects, "hpa-objects", o.HPAObjects, "Drive autoscaling/v2 HorizontalPodAutoscaler objects instead of PodAutoscalers (autoscaling.tidal.dev). Only where the built-in HPA controller does not run.")
	fs.IntVar(&o.Workers, "hpa-workers", o.Workers, "How many autoscalers the pod loop syncs at once.")
	fs.DurationVar(&o.SyncPeriod, "hpa-sync-period", o.SyncPeriod, "How often each autoscaler is synced.")
	fs.Float64Var(&o.Tolerance, "hpa-tolerance", o.Tolerance, "Usage-ratio tolerance under which no scaling happens (as --horizontal-pod-autoscaler-tolerance).")
	fs.DurationVar(&o.DownscaleStabilizationWindow, "hpa-downscale-stabilization", o.DownscaleStabilizationWindow, "How far back scale-down recommendations are considered (as --horizontal-pod-autoscaler-downscale-stabilization).")
	fs.DurationVar(&o.CPUInitializationPeriod, "hpa-cpu-initialization-period", o.CPUInitializationPeriod, "How long after start a pod's cpu samples may be set aside (as --horizontal-pod-autoscaler-cpu-initialization-period).")
	fs.DurationVar(&o.InitialReadinessDelay, "hpa-initial-readiness-delay", o.InitialReadinessDelay, "How long after start readiness changes count as initial (as --horizontal-pod-autoscaler-initial-readiness-delay).")
	fs.StringVar(&o.MetricsSource, "hpa-metrics-source", o.MetricsSource, "Where metrics come from: api (the Kubernetes metrics APIs) or simulated (a simulated load, for tidal-local).")
	fs.BoolVar(&o.ScaleInDeletionCost, "scale-in-deletion-cost", o.ScaleInDeletionCost, "Before scaling a Deployment or ReplicaSet down, set controller.kubernetes.io/pod-deletion-cost on its replicas so that those on the nodes scale-down would empty first are removed (costs users set are left alone).")
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL, "Prometheus server (http://host:port) that External metrics named \"prometheus\" query with the PromQL in their \"query\" selector label. Empty disables it.")
}

// Validate checks the pod loop's flags. An all-zero HPAOptions (an Options
// not built by NewOptions or AddFlags) takes the defaults.
func (o *HPAOptions) Validate() error {
	if *o == (HPAOptions{}) {
		*o = NewHPAOptions()
	}
	errs := []error{atLeast("--hpa-workers", o.Workers, 1), positive("--hpa-sync-period", o.SyncPeriod),
		nonNegative("--hpa-downscale-stabilization", o.DownscaleStabilizationWindow),
		nonNegative("--hpa-cpu-initialization-period", o.CPUInitializationPeriod),
		nonNegative("--hpa-initial-readiness-delay", o.InitialReadinessDelay)}
	if math.IsNaN(o.Tolerance) || o.Tolerance < 0 || o.Tolerance >= 1 {
		errs = append(errs, fmt.Errorf("--hpa-tolerance=%v must be in [0, 1)", o.Tolerance))
	}
	if o.MetricsSource != MetricsSourceAPI && o.MetricsSource != MetricsSourceSimulated {
		errs = append(errs, fmt.Errorf("--hpa-metrics-source=%q: want %q or %q", o.MetricsSource, MetricsSourceAPI, MetricsSourceSimulated))
	}
	if o.PrometheusURL != "" {
		u, err := url.Parse(o.PrometheusURL)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--prometheus-url=%q: %v", o.PrometheusURL, err))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("--prometheus-url=%q: want an http:// or https:// URL", o.PrometheusURL))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("--prometheus-url=%q: no host", o.PrometheusURL))
		}
	}
	return errors.Join(errs...)
}
