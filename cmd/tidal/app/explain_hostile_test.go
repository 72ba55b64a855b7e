package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tidal simulate and explain on hostile snapshots: the same node twice, a
// file larger than --from-file-max-bytes, an input without end. Each is an
// error naming what is wrong; before, the first panicked ("nodes "small-a"
// already exists") and the last ran out of memory.
func TestSnapshotCommandsRefuseHostileFiles(t *testing.T) {
	twice := filepath.Join(t.TempDir(), "twice.yaml")
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: small-a, labels: {eks.amazonaws.com/nodegroup: small}}\n"
	if err := os.WriteFile(twice, []byte(node+"---\n"+node), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"simulate", "--from-file", twice}, "document 2: Node small-a is in the snapshot twice (also document 1)"},
		{[]string{"explain", "node", "small-a", "--from-file", twice}, "is in the snapshot twice"},
		{[]string{"simulate", "--from-file", fixture, "--from-file-max-bytes=1000"}, "larger than 1000 bytes (--from-file-max-bytes)"},
		{[]string{"simulate", "--from-file", "/dev/zero", "--from-file-max-bytes=1048576"}, "larger than 1048576 bytes"},
		{[]string{"simulate", "--from-file", fixture, "--from-file-max-bytes=-1"}, "--from-file-max-bytes=-1: must not be negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if _, err := run(tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := run("simulate", "--from-file", fixture, "--from-file-max-bytes=100000000"); err != nil {
		t.Errorf("the fixture within the bound: %v", err)
	}
}
