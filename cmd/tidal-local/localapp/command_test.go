package localapp

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
)

// execute runs tidal-local with args, its output discarded, and returns its
// error.
func execute(args ...string) error {
	cmd := NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

// Flags tidal-local cannot run with fail with a message naming the flag,
// before any part of the cluster starts.
func TestMalformedFlagsFailBeforeTheClusterStarts(t *testing.T) {
	wantErr := map[string]string{
		"--nodes=3:1:general-a":                                   `--nodes="3:1:general-a"`,
		"--cloud-provider=aws":                                    `tidal-local runs the local cloud, directly (local) or over gRPC (externalgrpc)`,
		"--cloud-provider=externalgrpc --cloud-config=c.yaml":     `tidal-local serves its local cloud itself`,
		"--cloud-provider=externalgrpc --nodes=3:1:general-a":     `--nodes="3:1:general-a"`,
		"--duration=-1s":                                          `--duration=-1s must not be negative`,
		"--api-server-port=70000":                                 `--api-server-port=70000 is not a port number`,
		"--api-server-port=-1":                                    `--api-server-port=-1 is not a port number`,
		"--etcd-port=65536":                                       `--etcd-port=65536 is not a port number`,
		"--etcd-peer-port=-2":                                     `--etcd-peer-port=-2 is not a port number`,
		"--externalgrpc-port=70000 --cloud-provider=externalgrpc": `--externalgrpc-port=70000 is not a port number`,
		"--externalgrpc-port=7000":                                `--externalgrpc-port=7000 is only used with --cloud-provider=externalgrpc`,
		"--etcd-port=7000 --etcd-peer-port=7000":                  `--etcd-peer-port=7000: --etcd-port has that port already`,
		"--hpa-objects=false":                                     `--hpa-objects=false: the demo drives a HorizontalPodAutoscaler`,
		"--hpa-metrics-source=api":                                `--hpa-metrics-source=api: the demo's load is simulated`,
		"--hpa=false":                                             `--hpa=false: the demo needs the pod loop`,
		"--scan-interval=soon":                                    `invalid argument "soon" for "--scan-interval"`,
		"extra-arg":                                               `unknown command "extra-arg"`,
	}
	for args, want := range wantErr {
		if err := execute(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tidal-local %s: error = %v, want it to contain %q", args, err, want)
		}
	}
}

// Every flag of the production tidal command is a flag of tidal-local too
// (help and version are each command's own).
func TestLocalAcceptsEveryTidalFlag(t *testing.T) {
	local := NewCommand().Flags()
	tidal := app.NewCommand()
	n := 0
	check := func(f *pflag.Flag) {
		n++
		if f.Name != "help" && f.Name != "version" && local.Lookup(f.Name) == nil {
			t.Errorf("tidal-local does not accept --%s, a flag of tidal", f.Name)
		}
	}
	tidal.PersistentFlags().VisitAll(check)
	tidal.Flags().VisitAll(check)
	if n < 20 {
		t.Fatalf("tidal has %d flags: the check read the wrong flag sets", n)
	}
}

// --version prints the version and starts nothing: the directory given
// for the cluster stays empty.
func TestVersionPrintsAndStartsNoCluster(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := NewCommand()
	cmd.SetArgs([]string{"--version", "--dir=" + dir})
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("tidal-local --version: %v", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "tidal-local ") || strings.Count(got, "\n") != 1 {
		t.Errorf("tidal-local --version printed %q, want one line \"tidal-local VERSION\"", got)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("tidal-local --version wrote into --dir: %v %v", entries, err)
	}
}
