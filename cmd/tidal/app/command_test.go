package app

import (
	"bytes"
	"strings"
	"testing"
)

// execute runs the tidal command with args and returns its error.
func execute(args ...string) error {
	cmd := NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	return cmd.Execute()
}

func TestMalformedFlagsFailBeforeAnythingStarts(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--nodes=5:2:x"}, `--nodes="5:2:x": minimum size 5 is greater than maximum size 2`},
		{[]string{"--nodes=a:b"}, `--nodes="a:b": want MIN:MAX:NAME`},
		{[]string{"--nodes=x:2:a"}, `--nodes="x:2:a": minimum size "x" is not an integer`},
		{[]string{"--nodes=1:3:a", "--nodes=0:2:a"}, `node group "a" is already given by --nodes="1:3:a"`},
		{[]string{"--scan-interval=soon"}, `invalid argument "soon" for "--scan-interval"`},
		{[]string{"--cloud-provider=azure"}, `--cloud-provider="azure"`},
		{[]string{"--no-such-flag"}, `unknown flag: --no-such-flag`},
		{[]string{"--memory-total=0:17179869185"}, `--memory-total="0:17179869185": want 0 <= MIN <= MAX <= 8589934591`},
		{[]string{"--scale-down-utilization-threshold=NaN"}, `--scale-down-utilization-threshold=NaN must be a number between 0 and 1`},
		{[]string{"--leader-elect-resource-name="}, `--leader-elect-resource-name must not be empty`},
		{[]string{"extra-arg"}, `unknown command "extra-arg"`},
		{[]string{"--balancing-label=pool", "--balancing-ignore-label=x"}, `--balancing-label="pool" cannot be combined with --balancing-ignore-label="x"`},
		{[]string{"--balancing-label=bad key"}, `--balancing-label="bad key" is not a label key`},
		{[]string{"--scale-down-gpu-utilization-threshold=1.5"}, `--scale-down-gpu-utilization-threshold=1.5 must be a number between 0 and 1`},
		{[]string{"--max-failing-time=5s"}, `--max-failing-time=5s must be longer than --scan-interval=10s`},
		{[]string{"--logging-format=xml"}, `logging flags`},
		{[]string{"--kubernetes=not a url"}, `--kubernetes="not a url"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := execute(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// The production binary has no embedded cluster: `tidal local`, with any
// flags, says which binary has it instead of failing on an unknown flag.
func TestLocalSaysWhereItWent(t *testing.T) {
	for _, args := range [][]string{{"local"}, {"local", "--demo=false", "--duration=1m"}} {
		err := execute(args...)
		if err == nil || !strings.Contains(err.Error(), "tidal-local") || !strings.Contains(err.Error(), "make run") {
			t.Errorf("tidal %s: error = %v, want it to name the tidal-local binary and make run", strings.Join(args, " "), err)
		}
	}
}
