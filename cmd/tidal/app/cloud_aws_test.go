package app

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tidal-autoscaler/tidal/config"
)

func parseFlags(t *testing.T, args ...string) (*config.Options, error) {
	t.Helper()
	o := config.NewOptions()
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

func TestAWSFlags(t *testing.T) {
	o, err := parseFlags(t)
	if err != nil {
		t.Fatalf("defaults with the local provider: %v", err)
	}
	if o.AWS.RefreshInterval != time.Minute || o.AWS.NodeReservation != config.AWSNodeReservationEKS {
		t.Fatalf("AWS defaults %+v", o.AWS)
	}
	o, err = parseFlags(t, "--cloud-provider=aws", "--aws-region=eu-central-1", "--aws-refresh-interval=30s",
		"--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod",
		"--node-group-auto-discovery=asg:tag=aws:cloudformation:stack-name=gpu,team=ml")
	if err != nil {
		t.Fatal(err)
	}
	d := o.AWS.NodeGroupAutoDiscovery
	if len(d) != 2 || len(d[0].Tags) != 2 || d[0].Tags[1].Key != "k8s.io/cluster-autoscaler/prod" || d[0].Tags[1].Value != "" ||
		d[1].Tags[0] != (config.ASGTagFilter{Key: "aws:cloudformation:stack-name", Value: "gpu"}) || d[1].Tags[1].Value != "ml" {
		t.Fatalf("parsed discovery %+v", d)
	}
	cfg, err := awsConfig(o)
	if err != nil || cfg.RefreshInterval != 30*time.Second || len(cfg.AutoDiscovery) != 2 {
		t.Fatalf("config %+v %v", cfg, err)
	}
	if _, err := parseFlags(t, "--cloud-provider=aws", "--nodes=1:5:my-asg", "--aws-max-pods=58", "--aws-node-reservation=none"); err != nil {
		t.Fatalf("static groups: %v", err)
	}
	if o, err := parseFlags(t, "--cloud-provider=aws", "--nodes=1:5:my-asg", "--aws-interruption-queue=tidal-interruptions.fifo"); err != nil {
		t.Fatalf("interruption queue: %v", err)
	} else if cfg, err := awsConfig(o); err != nil || cfg.InterruptionQueue != "tidal-interruptions.fifo" {
		t.Fatalf("interruption queue: config %+v %v", cfg.InterruptionQueue, err)
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--aws-region=us-east-1"}, `--aws-region="us-east-1" is only valid with --cloud-provider=aws`},
		{[]string{"--node-group-auto-discovery=asg:tag=x"}, `--node-group-auto-discovery="asg:tag=x" is only valid with --cloud-provider=aws`},
		{[]string{"--aws-refresh-interval=1m"}, `--aws-refresh-interval=1m0s is only valid`},
		{[]string{"--cloud-provider=aws"}, `needs node groups`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--node-group-auto-discovery=asg:tag=x"}, `cannot be combined with --nodes="1:2:a"`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=asg:tag="}, `--node-group-auto-discovery="asg:tag=": no tag given`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=mig:namePrefix=x"}, `discoverer "mig" is not supported`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=asg:label=x"}, `the only parameter of asg is tag`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=k8s.io/cluster-autoscaler/enabled"}, `want asg:tag=KEY[=VALUE]`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=asg:tag=a,,b"}, `empty tag key`},
		{[]string{"--cloud-provider=aws", "--node-group-auto-discovery=asg:tag=a,a=1"}, `tag key "a" is given twice`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--aws-region=us_east_1"}, `--aws-region="us_east_1" is not an AWS region name`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--aws-refresh-interval=0s"}, `--aws-refresh-interval=0s must be positive`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--aws-max-pods=-1"}, `--aws-max-pods=-1 must not be negative`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--aws-node-reservation=bottlerocket"}, `--aws-node-reservation="bottlerocket"`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--aws-interruption-queue=https://sqs.us-east-1.amazonaws.com/1/q"}, `--aws-interruption-queue="https://sqs.us-east-1.amazonaws.com/1/q" is not an SQS queue name`},
		{[]string{"--cloud-provider=aws", "--nodes=1:2:a", "--aws-interruption-queue=" + strings.Repeat("q", 81)}, `is not an SQS queue name`},
		{[]string{"--aws-interruption-queue=q"}, `--aws-interruption-queue="q" is only valid with --cloud-provider=aws`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseFlags(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}

	o, err = parseFlags(t, "--cloud-provider=aws", "--nodes=1:2:a", "--aws-price-table="+filepath.Join(t.TempDir(), "missing.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsConfig(o); err == nil || !strings.Contains(err.Error(), "--aws-price-table") {
		t.Fatalf("missing price table: %v", err)
	}

	// Options built without flags are checked by value.
	plain := config.NewOptions()
	if err := plain.Validate(); err != nil {
		t.Fatalf("options without flags: %v", err)
	}
	plain.AWS.Region = "us-east-1"
	if err := plain.Validate(); err == nil || !strings.Contains(err.Error(), "--aws-region") {
		t.Fatalf("aws region with the local provider, no flags: %v", err)
	}
}
