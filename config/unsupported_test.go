package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func requested(t *testing.T, args ...string) []UnsupportedFeature {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return RequestedUnsupported(fs)
}

func TestRequestedUnsupported(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // flag=value (feature), joined by "; "
	}{
		{nil, ""},
		// Set to CA's "off" value, or to a value that asks for nothing.
		{[]string{"--enable-provisioning-requests=false", "--scheduler-config-file=", "--gpu-total=", "--enable-dynamic-resource-allocation=false"}, ""},
		// Tuning of machinery tidal does not have asks for no feature.
		{[]string{"--max-free-difference-ratio=0.1", "--cluster-snapshot-parallelism=4"}, ""},
		{[]string{"--enable-provisioning-requests"}, "enable-provisioning-requests=true (ProvisioningRequests)"},
		{[]string{"--enable-dynamic-resource-allocation=true"}, "enable-dynamic-resource-allocation=true (dynamic resource allocation (DRA) in its simulation)"},
		{[]string{"--scheduler-config-file=/etc/ca/scheduler.yaml", "--drain-priority-config=10000:20,1000:100,0:60"},
			"scheduler-config-file=/etc/ca/scheduler.yaml (a scheduler configuration of its own in its simulation); drain-priority-config=10000:20,1000:100,0:60 (drain priorities)"},
		{[]string{"--blocking-system-pod-distruption-timeout=1h"}, "blocking-system-pod-distruption-timeout=1h0m0s (the release of kube-system pods without a PodDisruptionBudget after a timeout)"},
		{[]string{"--gpu-total=nvidia.com/gpu:0:16"}, "gpu-total=nvidia.com/gpu:0:16 (GPU limits)"},
	} {
		var got []string
		for _, u := range requested(t, tc.args...) {
			got = append(got, u.Flag+"="+u.Value+" ("+u.Feature+")")
			if u.Note == "" {
				t.Errorf("%s: no note of what tidal does instead", u.Flag)
			}
		}
		if g := strings.Join(got, "; "); g != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.args, g, tc.want)
		}
	}
}

// Every flag of the table is a CA flag tidal accepts without effect.
func TestUnsupportedFeaturesAreAcceptedCAFlags(t *testing.T) {
	accepted := map[string]bool{}
	for _, f := range caAcceptedFlags() {
		accepted[f.Name] = true
	}
	for _, u := range unsupportedFeatures {
		if !accepted[u.flag] {
			t.Errorf("--%s is not an accepted CA flag", u.flag)
		}
	}
}
