package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestTaintFlagsRepeat(t *testing.T) {
	o, err := parse(t, "--startup-taint=example.com/gpu-driver", "--startup-taint=cni",
		"--ignore-taint=old", "--status-taint=status.example.com/maintenance")
	if err != nil {
		t.Fatal(err)
	}
	want := TaintOptions{StartupTaints: []string{"example.com/gpu-driver", "cni"}, IgnoreTaints: []string{"old"},
		StatusTaints: []string{"status.example.com/maintenance"}}
	if !reflect.DeepEqual(o.Taints, want) {
		t.Fatalf("taint options %+v, want %+v", o.Taints, want)
	}
	if o, _ := parse(t); len(o.Taints.StartupTaints)+len(o.Taints.IgnoreTaints)+len(o.Taints.StatusTaints) != 0 {
		t.Fatalf("default taint options %+v, want none", o.Taints)
	}
}

func TestTaintFlagsNameTheBadValue(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--startup-taint=gpu driver"}, `--startup-taint="gpu driver" is not a taint key`},
		{[]string{"--ignore-taint="}, `--ignore-taint="" is not a taint key`},
		{[]string{"--status-taint=a/b/c"}, `--status-taint="a/b/c" is not a taint key`},
		{[]string{"--status-taint=x:NoSchedule"}, `--status-taint="x:NoSchedule" is not a taint key`},
		{[]string{"--startup-taint=x", "--status-taint=x"}, `--status-taint="x" is also given as a startup taint`},
		{[]string{"--ignore-taint=x", "--status-taint=x"}, `--status-taint="x" is also given as a startup taint`},
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
