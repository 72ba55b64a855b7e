package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

func TestDefaults(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if o.Namespace != "kube-system" || o.Address != ":8085" || !o.LeaderElect || o.ScanInterval != 10*time.Second ||
		o.CloudProvider != "local" || o.MaxNodeProvisionTime != 15*time.Minute {
		t.Fatalf("unexpected defaults: %+v", o)
	}
}

func TestValidateNamesTheBadFlag(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--nodes=5:2:x"}, `--nodes="5:2:x"`},
		{[]string{"--nodes=1:2:a", "--nodes=1:3:a"}, `already given`},
		{[]string{"--cloud-provider=gce"}, `--cloud-provider="gce"`},
		{[]string{"--scan-interval=0s"}, `--scan-interval=0s must be positive`},
		{[]string{"--address=8085"}, `--address="8085"`},
		{[]string{"--address=:99999"}, `"99999" is not a port number`},
		{[]string{"--namespace="}, `--namespace must not be empty`},
		{[]string{"--leader-elect-renew-deadline=20s"}, `must be shorter than --leader-elect-lease-duration`},
		{[]string{"--cloud-provider=aws", "--local-node-groups=x.yaml"}, `only valid with --cloud-provider=local`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestLeaderElectionOffSkipsItsChecks(t *testing.T) {
	if _, err := parse(t, "--leader-elect=false", "--leader-elect-renew-deadline=20s"); err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}
