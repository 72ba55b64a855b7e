package config

import (
	"strings"

	"github.com/spf13/pflag"
)

// UnsupportedFeature is a Cluster Autoscaler feature asked for on the
// command line that tidal does not implement.
type UnsupportedFeature struct {
	// Flag and Value are the flag given, as name=value.
	Flag, Value string
	// Feature names what it asks for; Note what tidal does instead.
	Feature, Note string
}

// asks tells from a flag's value whether it asks for the feature.
type asks func(value string) bool

func isTrue(v string) bool { return v == "true" }

func nonEmpty(v string) bool { return v != "" && v != "[]" }

func anyValue(string) bool { return true }

// unsupportedFeatures are the accepted CA flags that, given a value that
// turns a feature on, ask for something tidal does not do. The others
// (tuning of CA's own machinery, other clouds) change nothing tidal has.
var unsupportedFeatures = []struct {
	flag    string
	asks    asks
	feature string
}{
	{"enable-provisioning-requests", isTrue, "ProvisioningRequests"},
	{"check-capacity-batch-processing", isTrue, "ProvisioningRequests (check-capacity batches)"},
	{"enable-dynamic-resource-allocation", isTrue, "dynamic resource allocation (DRA) in its simulation"},
	{"scheduler-config-file", nonEmpty, "a scheduler configuration of its own in its simulation"},
	{"drain-priority-config", nonEmpty, "drain priorities"},
	{"blocking-system-pod-distruption-timeout", anyValue, "the release of kube-system pods without a PodDisruptionBudget after a timeout"},
	{"capacity-buffer-controller-enabled", isTrue, "CapacityBuffers"},
	{"capacity-buffer-pod-injection-enabled", isTrue, "CapacityBuffers"},
	{"capacity-quotas-enabled", isTrue, "capacity quotas"},
	{"gpu-total", nonEmpty, "GPU limits"},
	{"grpc-expander-url", nonEmpty, "the grpc expander"},
	{"enable-proactive-scaleup", isTrue, "proactive scale-up"},
	{"bypassed-scheduler-names", nonEmpty, "scale-up for pods of other schedulers"},
	{"debugging-snapshot-enabled", isTrue, "the debugging snapshot"},
	{"profiling", isTrue, "pprof endpoints"},
}

// RequestedUnsupported lists the flags set on fs that ask for a feature
// tidal does not implement, in the order of the table above.
func RequestedUnsupported(fs *pflag.FlagSet) []UnsupportedFeature {
	notes := map[string]string{}
	for _, f := range caAcceptedFlags() {
		notes[f.Name] = f.Note
	}
	var out []UnsupportedFeature
	for _, u := range unsupportedFeatures {
		f := fs.Lookup(u.flag)
		if f == nil || !f.Changed || !u.asks(f.Value.String()) {
			continue
		}
		out = append(out, UnsupportedFeature{Flag: u.flag, Value: strings.Trim(f.Value.String(), "[]"), Feature: u.feature, Note: notes[u.flag]})
	}
	return out
}
