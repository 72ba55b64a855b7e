package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2/textlogger"

	"github.com/tidal-autoscaler/tidal/config"
)

// started is what a command run stopped at the start: the validated
// options and flags, or nil when it never got there.
type started struct {
	opts    *config.Options
	flags   *pflag.FlagSet
	logging *logsapi.LoggingConfiguration
}

// executeUntilStart runs the tidal command with args up to the start of
// tidal (flags parsed and validated), and returns what it would start with.
func executeUntilStart(args ...string) (*started, string, error) {
	var got *started
	cmd := newCommand(func(cmd *cobra.Command, opts *config.Options, logging *logsapi.LoggingConfiguration) error {
		got = &started{opts: opts, flags: cmd.Flags(), logging: logging}
		return nil
	})
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return got, out.String(), err
}

// Cluster Autoscaler's own command lines start tidal: the AWS examples of
// its documentation, its Helm chart's default arguments and the ones its
// values.yaml suggests.
func TestCACommandLinesStartTidal(t *testing.T) {
	discovery := "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster"
	tests := []struct {
		name  string
		args  []string
		check func(*started) string
	}{
		{"CA's AWS example, auto-discovery", []string{"--v=4", "--stderrthreshold=info", "--cloud-provider=aws",
			"--skip-nodes-with-local-storage=false", "--expander=least-waste", discovery},
			func(s *started) string {
				if s.opts.ScaleDown.SkipNodesWithLocalStorage || len(s.opts.AWS.NodeGroupAutoDiscovery) != 1 || s.logging.Verbosity != 4 {
					return "skip-nodes-with-local-storage, discovery or -v not taken"
				}
				return ""
			}},
		{"CA's AWS example, --nodes", []string{"--v=4", "--stderrthreshold=info", "--cloud-provider=aws",
			"--skip-nodes-with-local-storage=false", "--expander=least-waste", "--nodes=1:10:k8s-worker-asg-1", "--nodes=1:3:k8s-worker-asg-2"},
			func(s *started) string {
				if len(s.opts.NodeGroups) != 2 {
					return "node groups not taken"
				}
				return ""
			}},
		{"CA chart's default args", []string{"--cloud-provider=aws", "--namespace=kube-system", discovery,
			"--logtostderr=true", "--stderrthreshold=info", "--v=4"}, nil},
		{"CA chart's suggested extraArgs", []string{"--cloud-provider=aws", "--namespace=kube-system", discovery,
			"--write-status-configmap=true", "--status-config-map-name=cluster-autoscaler-status", "--leader-elect=true",
			"--leader-elect-resource-lock=endpoints", "--skip-nodes-with-local-storage=true", "--expander=random",
			"--scale-down-enabled=true", "--balance-similar-node-groups=true", "--min-replica-count=0",
			"--scale-down-utilization-threshold=0.5", "--scale-down-non-empty-candidates-count=30", "--max-node-provision-time=15m0s",
			"--scan-interval=10s", "--scale-down-delay-after-add=10m", "--scale-down-delay-after-delete=0s",
			"--scale-down-delay-after-failure=3m", "--scale-down-unneeded-time=10m", "--node-deletion-delay-timeout=2m",
			"--node-deletion-batcher-interval=0s", "--skip-nodes-with-system-pods=true",
			"--balancing-ignore-label=first-label-to-ignore", "--balancing-ignore-label=second-label-to-ignore"},
			func(s *started) string {
				if s.opts.ScaleUp.StatusConfigMapName != "cluster-autoscaler-status" || len(s.opts.ScaleUp.BalancingIgnoreLabels) != 2 {
					return "status ConfigMap name or balancing labels not taken"
				}
				return ""
			}},
		{"JSON logs", []string{"--cloud-provider=aws", discovery, "--logging-format=json", "--log-flush-frequency=2s"},
			func(s *started) string {
				if s.logging.Format != "json" {
					return "logging format not taken"
				}
				return ""
			}},
		{"CA's externalgrpc provider", []string{"--cloud-provider=externalgrpc", "--cloud-config=/etc/cluster-autoscaler/cloud-config.yaml"},
			func(s *started) string {
				if s.opts.CloudProvider != "externalgrpc" || s.opts.CloudConfig != "/etc/cluster-autoscaler/cloud-config.yaml" {
					return "provider or cloud config not taken"
				}
				return ""
			}},
		{"klog's flags with underscores", []string{"--cloud-provider=aws", discovery, "--log_file=/tmp/x.log", "--skip_headers"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, out, err := executeUntilStart(tc.args...)
			if err != nil || s == nil {
				t.Fatalf("tidal %s: %v (started: %v)\n%s", strings.Join(tc.args, " "), err, s != nil, out)
			}
			if tc.check != nil {
				if msg := tc.check(s); msg != "" {
					t.Errorf("tidal %s: %s", strings.Join(tc.args, " "), msg)
				}
			}
		})
	}
}

// Every flag of the pinned CA release (config.CAFlags, which config's
// tests compare with that release's extract) is a flag of tidal, klog's
// and the logging ones included; those with no effect are
// hidden, the others are not.
func TestEveryCAFlagIsAFlagOfTidal(t *testing.T) {
	fs := NewCommand().PersistentFlags()
	for _, ca := range config.CAFlags() {
		f := fs.Lookup(ca.Name)
		switch {
		case f == nil:
			t.Errorf("--%s is not a flag of tidal", ca.Name)
		case f.Hidden != (ca.Status == config.CAFlagAccepted):
			t.Errorf("--%s is %s but hidden=%v", ca.Name, ca.Status, f.Hidden)
		}
	}
}

func TestVersionPrintsTidalsVersion(t *testing.T) {
	s, out, err := executeUntilStart("--version")
	if err != nil || s != nil {
		t.Fatalf("--version: error %v, started %v", err, s != nil)
	}
	if !strings.HasPrefix(out, "tidal ") || strings.Contains(out, "v1.36") {
		t.Fatalf("--version printed %q, want tidal's own version", out)
	}
}

// Plain `tidal --kubeconfig ...` no longer starts the local cloud.
func TestCloudProviderIsRequired(t *testing.T) {
	s, _, err := executeUntilStart("--kubeconfig=/dev/null")
	if err == nil || !strings.Contains(err.Error(), "--cloud-provider is required") || s != nil {
		t.Fatalf("error %v, started %v; want --cloud-provider is required", err, s != nil)
	}
}

// The start logs CA flags given that have no effect, and tidal's own
// defaults that were not set, once each.
func TestStartNotes(t *testing.T) {
	s, _, err := executeUntilStart("--cloud-provider=aws", "--nodes=1:3:a", "--estimator=binpacking", "--regional", "--max-binpacking-time=1m")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logStartNotes(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf))), s.flags)
	log := buf.String()
	for _, want := range []string{`flags=["estimator=binpacking","regional=true"]`, `flag="--max-drain-parallelism" value="5" clusterAutoscaler="1"`} {
		if !strings.Contains(log, want) {
			t.Errorf("start log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "--max-binpacking-time") || strings.Count(log, "without effect") != 1 {
		t.Errorf("start log notes a flag that was set, or notes twice:\n%s", log)
	}
}
