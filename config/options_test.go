package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/leaderelection"
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
		{[]string{"--cloud-provider=externalgrpc"}, `--cloud-provider=externalgrpc needs --cloud-config`},
		{[]string{"--cloud-provider=local", "--cloud-config=c.yaml"}, `--cloud-config="c.yaml" is only used with --cloud-provider=externalgrpc`},
		{[]string{"--scan-interval=0s"}, `--scan-interval=0s must be positive`},
		{[]string{"--max-node-lifetime=-1h"}, `--max-node-lifetime=-1h0m0s must not be negative`},
		{[]string{"--address=8085"}, `--address="8085"`},
		{[]string{"--address=:99999"}, `"99999" is not a port number`},
		{[]string{"--namespace="}, `--namespace must not be empty`},
		{[]string{"--leader-elect-renew-deadline=20s"}, `must be shorter than --leader-elect-lease-duration`},
		{[]string{"--cloud-provider=aws", "--local-node-groups=x.yaml"}, `only valid with --cloud-provider=local`},
		{[]string{"--namespace=Kube_System"}, `--namespace="Kube_System" is not a valid namespace name`},

		// Leader election: what client-go and the Lease API would refuse
		// later, leaving tidal a standby for ever while /healthz says ok.
		{[]string{"--leader-elect-resource-name="}, `--leader-elect-resource-name must not be empty`},
		{[]string{"--leader-elect-resource-name=Tidal_Lease"}, `--leader-elect-resource-name="Tidal_Lease" is not a valid Lease name`},
		{[]string{"--leader-elect-lease-duration=500ms", "--leader-elect-renew-deadline=400ms", "--leader-elect-retry-period=100ms"},
			`--leader-elect-lease-duration=500ms must be between 1s and`},
		{[]string{"--leader-elect-lease-duration=600000h", "--leader-elect-renew-deadline=10s"}, `--leader-elect-lease-duration=600000h0m0s must be between`},
		{[]string{"--leader-elect-retry-period=9s"}, `--leader-elect-renew-deadline=10s must be longer than 1.2 times --leader-elect-retry-period=9s`},
		{[]string{"--leader-elect-retry-period=0s"}, `--leader-elect-retry-period=0s must be positive`},

		// Liveness: a limit shorter than the time between two runs fails
		// /healthz on a healthy replica.
		{[]string{"--max-inactivity=5s"}, `--max-inactivity=5s must be longer than --scan-interval=10s`},
		{[]string{"--max-inactivity=12s", "--hpa-sync-period=15s"}, `--max-inactivity=12s must be longer than --hpa-sync-period=15s`},

		{[]string{"--kube-client-qps=NaN"}, `--kube-client-qps=NaN must be a positive number`},
		{[]string{"--kube-client-qps=+Inf"}, `--kube-client-qps=+Inf must be a positive number`},
		{[]string{"--kube-client-qps=0"}, `--kube-client-qps=0 must be a positive number`},
		{[]string{"--kube-client-burst=0"}, `--kube-client-burst=0 must be at least 1`},
		{[]string{"--kube-api-content-type=application/cbor"}, `--kube-api-content-type="application/cbor": want application/vnd.kubernetes.protobuf or application/json`},
		{[]string{"--kube-api-content-type="}, `--kube-api-content-type="": want`},

		// Totals that would wrap around in millicores or bytes.
		{[]string{"--memory-total=0:17179869185"}, `--memory-total="0:17179869185": want 0 <= MIN <= MAX <= 8589934591`},
		{[]string{"--cores-total=0:18446744073709552"}, `--cores-total="0:18446744073709552": want 0 <= MIN <= MAX <= 9223372036854775`},
		{[]string{"--cores-total=0:99999999999999999999"}, `--cores-total="0:99999999999999999999": want 0 <= MIN <= MAX`},
		{[]string{"--memory-total=-1:10"}, `--memory-total="-1:10": want 0 <= MIN <= MAX`},
		{[]string{"--memory-total=10:1"}, `--memory-total="10:1": want 0 <= MIN <= MAX`},
		{[]string{"--cores-total=a:1"}, `--cores-total="a:1": MIN and MAX must be integers`},
		{[]string{"--cores-total=10"}, `--cores-total="10": want MIN:MAX`},

		// NaN compares false with everything: every node a candidate, the
		// unready stop never firing.
		{[]string{"--scale-down-utilization-threshold=NaN"}, `--scale-down-utilization-threshold=NaN must be a number between 0 and 1`},
		{[]string{"--scale-down-utilization-threshold=1.5"}, `--scale-down-utilization-threshold=1.5 must be a number between 0 and 1`},
		{[]string{"--max-total-unready-percentage=NaN"}, `--max-total-unready-percentage=NaN must be a number between 0 and 100`},
		{[]string{"--max-total-unready-percentage=-Inf"}, `--max-total-unready-percentage=-Inf must be a number between 0 and 100`},
		{[]string{"--hpa-tolerance=NaN"}, `--hpa-tolerance=NaN must be in [0, 1)`},
		{[]string{"--hpa-tolerance=1"}, `--hpa-tolerance=1 must be in [0, 1)`},

		{[]string{"--status-config-map-name=Bad_Name"}, `--status-config-map-name="Bad_Name" is not a valid ConfigMap name`},
		{[]string{"--status-config-map-name="}, `--status-config-map-name must not be empty`},
		{[]string{"--max-graceful-termination-sec=9223372037"}, `--max-graceful-termination-sec=9223372037 must be between 0 and 9223372036`},
		{[]string{"--max-graceful-termination-sec=-1"}, `--max-graceful-termination-sec=-1 must be between 0 and`},
		{[]string{"--expendable-pods-priority-cutoff=4294967296"}, `--expendable-pods-priority-cutoff=4294967296 is out of range`},
		{[]string{"--balancing-ignore-label=bad label"}, `--balancing-ignore-label="bad label" is not a label key`},
		{[]string{"--balancing-ignore-label="}, `--balancing-ignore-label="" is not a label key`},
		{[]string{"--max-nodes-total=-1"}, `--max-nodes-total=-1 must not be negative`},
		{[]string{"--max-nodes-per-scaleup=0"}, `--max-nodes-per-scaleup=0 must be at least 1`},
		{[]string{"--ok-total-unready-count=-1"}, `--ok-total-unready-count=-1 must not be negative`},
		{[]string{"--new-pod-scale-up-delay=-1s"}, `--new-pod-scale-up-delay=-1s must not be negative`},
		{[]string{"--max-binpacking-time=0s"}, `--max-binpacking-time=0s must be positive`},
		{[]string{"--initial-node-group-backoff-duration=1h"}, `is longer than --max-node-group-backoff-duration=30m0s`},
		{[]string{"--expander=cheapest"}, `--expander="cheapest": unknown expander`},
		{[]string{"--scale-up-placement=spread"}, `--scale-up-placement="spread": want "plan" or "scheduler"`},
		{[]string{"--scale-down-unneeded-time=-1m"}, `--scale-down-unneeded-time=-1m0s must not be negative`},
		{[]string{"--max-pod-eviction-time=-1s"}, `--max-pod-eviction-time=-1s must not be negative`},
		{[]string{"--max-scale-down-parallelism=0"}, `--max-scale-down-parallelism=0 must be at least 1`},
		{[]string{"--max-drain-parallelism=0"}, `--max-drain-parallelism=0 must be at least 1`},
		{[]string{"--max-bulk-soft-taint-count=-1"}, `--max-bulk-soft-taint-count=-1 must not be negative`},
		{[]string{"--max-pending-evicted-pods=-1"}, `--max-pending-evicted-pods=-1 must not be negative`},
		{[]string{"--pending-evicted-pods-timeout=0s"}, `--pending-evicted-pods-timeout=0s must be positive`},
		{[]string{"--hpa-workers=0"}, `--hpa-workers=0 must be at least 1`},
		{[]string{"--hpa-sync-period=0s"}, `--hpa-sync-period=0s must be positive`},
		{[]string{"--hpa-downscale-stabilization=-1s"}, `--hpa-downscale-stabilization=-1s must not be negative`},
		{[]string{"--hpa-metrics-source=prometheus"}, `--hpa-metrics-source="prometheus"`},
		{[]string{"--prometheus-url=prometheus:9090"}, `--prometheus-url="prometheus:9090": want an http:// or https:// URL`},
		{[]string{"--cloud-provider=aws", "--nodes=1:3:asg", "--aws-region=us east 1"}, `--aws-region="us east 1" is not an AWS region name`},
		{[]string{"--cloud-provider=aws", "--nodes=1:3:asg", "--aws-region=us_east_1"}, `--aws-region="us_east_1" is not an AWS region name`},
		{[]string{"--cloud-provider=aws", "--nodes=1:3:asg", "--aws-region=us-east-1-"}, `--aws-region="us-east-1-" is not an AWS region name`},
		{[]string{"--cloud-provider=aws", "--nodes=1:3:asg", "--aws-region=us-east-1.example.com"}, `--aws-region="us-east-1.example.com" is not an AWS region name`},
		{[]string{"--cloud-provider=aws", "--nodes=1:3:asg", "--aws-max-pods=-1"}, `--aws-max-pods=-1 must not be negative`},
		{[]string{"--cloud-provider=aws", "--nodes=1:3:asg", "--aws-refresh-interval=0s"}, `--aws-refresh-interval=0s must be positive`},
		{[]string{"--aws-region=us-east-1"}, `--aws-region="us-east-1" is only valid with --cloud-provider=aws`},
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

// The largest values that still fit their conversions are accepted and
// arrive unchanged.
func TestLargestValuesAreAccepted(t *testing.T) {
	o, err := parse(t, "--memory-total=0:8589934591", "--cores-total=0:9223372036854775",
		"--max-graceful-termination-sec=9223372036", "--expendable-pods-priority-cutoff=-2147483648",
		"--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=800ms", "--leader-elect-retry-period=500ms",
		"--max-inactivity=11s", "--hpa-sync-period=10s")
	if err != nil {
		t.Fatal(err)
	}
	if o.ScaleUp.MaxMemoryGiB<<30 <= 0 || o.ScaleUp.MaxCores*1000 <= 0 {
		t.Fatalf("totals %d GiB, %d cores overflow their conversions", o.ScaleUp.MaxMemoryGiB, o.ScaleUp.MaxCores)
	}
}

func TestLeaderElectionJitterIsClientGos(t *testing.T) {
	if leaderElectionJitter != leaderelection.JitterFactor {
		t.Fatalf("leaderElectionJitter = %v, client-go's JitterFactor = %v", leaderElectionJitter, leaderelection.JitterFactor)
	}
}

// Regions are checked as the SDK checks them: those of every partition,
// the European Sovereign Cloud's and the ISO ones included.
func TestAWSRegionsOfEveryPartition(t *testing.T) {
	for _, r := range []string{"us-east-1", "eusc-de-east-1", "us-gov-west-1", "cn-north-1", "us-iso-east-1", "us-isob-east-1", "ap-southeast-7", "mx-central-1"} {
		if _, err := parse(t, "--cloud-provider=aws", "--nodes=1:3:asg", "--aws-region="+r); err != nil {
			t.Errorf("--aws-region=%s: %v", r, err)
		}
	}
}
