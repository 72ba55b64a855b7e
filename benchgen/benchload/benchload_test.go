package benchload

import (
	"os"
	"runtime"
	"testing"

	"github.com/tidal-autoscaler/tidal/benchgen"
)

// TestClusterIsReceivedWholeAndLeavesNoFile: every generated object comes
// back through the stream, trimmed as the informers keep it, in the order
// generated, and the stream's file is gone afterwards.
func TestClusterIsReceivedWholeAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	want := benchgen.Generate(benchgen.S1())
	got := Cluster(t, benchgen.S1())
	if len(got.Nodes) != len(want.Nodes) || len(got.RunningPods) != len(want.RunningPods) ||
		len(got.PendingPods) != len(want.PendingPods) || len(got.ReplicaSets) != len(want.ReplicaSets) {
		t.Fatalf("received %d nodes, %d running and %d pending pods, %d ReplicaSets; generated %d, %d, %d, %d",
			len(got.Nodes), len(got.RunningPods), len(got.PendingPods), len(got.ReplicaSets),
			len(want.Nodes), len(want.RunningPods), len(want.PendingPods), len(want.ReplicaSets))
	}
	for i, p := range got.RunningPods {
		w := want.RunningPods[i]
		if p.Name != w.Name || p.Spec.NodeName != w.Spec.NodeName {
			t.Fatalf("running pod %d is %s on %s, generated %s on %s", i, p.Name, p.Spec.NodeName, w.Name, w.Spec.NodeName)
		}
		if len(p.ManagedFields) != 0 {
			t.Fatalf("running pod %s kept its managed fields: not trimmed as the informers keep it", p.Name)
		}
	}
	for i, n := range got.Nodes {
		if n.Name != want.Nodes[i].Name {
			t.Fatalf("node %d is %s, generated %s", i, n.Name, want.Nodes[i].Name)
		}
	}
	for i, p := range got.PendingPods {
		if p.Name != want.PendingPods[i].Name || p.Spec.NodeName != "" {
			t.Fatalf("pending pod %d is %s (node %q), generated %s", i, p.Name, p.Spec.NodeName, want.PendingPods[i].Name)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("the stream's file was left behind: %v", left[0].Name())
	}
}

// TestStreamFileHasNoNameWhileLoading: where the system lets an open file
// be unlinked, the stream's file has no name from the start, so a process
// killed while loading leaves nothing behind.
func TestStreamFileHasNoNameWhileLoading(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("windows does not unlink an open file: the stream's file is removed when it is closed")
	}
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	w, err := newWatch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 || !w.unlinked {
		t.Fatalf("the open stream's file still has a name (%d entries, unlinked %v): a killed process would leave it", len(left), w.unlinked)
	}
}
