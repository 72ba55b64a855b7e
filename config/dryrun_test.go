package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestDryRunNames: a shadow gets its own Lease and status ConfigMap unless
// told otherwise, and never those of the autoscaler it runs beside.
func TestDryRunNames(t *testing.T) {
	for _, c := range []struct {
		args               []string
		lease, status, err string
	}{
		{args: nil, lease: "tidal", status: "tidal-status"},
		{args: []string{"--dry-run"}, lease: DryRunLeaseName, status: DryRunStatusConfigMapName},
		{args: []string{"--dry-run", "--leader-elect-resource-name=shadow", "--status-config-map-name=shadow-status"}, lease: "shadow", status: "shadow-status"},
		{args: []string{"--dry-run", "--leader-elect-resource-name=cluster-autoscaler"}, err: "Cluster Autoscaler's Lease"},
		{args: []string{"--dry-run", "--status-config-map-name=cluster-autoscaler-status"}, err: "Cluster Autoscaler's status ConfigMap"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--cloud-provider=local"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want one saying %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if o.LeaseName != c.lease || o.ScaleUp.StatusConfigMapName != c.status {
			t.Errorf("%v: lease %q, status %q; want %q, %q", c.args, o.LeaseName, o.ScaleUp.StatusConfigMapName, c.lease, c.status)
		}
	}
}
