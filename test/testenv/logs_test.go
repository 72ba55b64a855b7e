package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// recordingTB is a test whose outcome and output the test sets and reads.
type recordingTB struct {
	testing.TB
	failed   bool
	logs     []string
	cleanups []func()
}

func (r *recordingTB) Helper()                 {}
func (r *recordingTB) Failed() bool            { return r.failed }
func (r *recordingTB) Cleanup(f func())        { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Logf(f string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }

func (r *recordingTB) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestLogOnFailurePrintsOnlyForAFailedTest(t *testing.T) {
	for _, failed := range []bool{false, true} {
		tb := &recordingTB{}
		ctx := LogOnFailure(context.Background(), tb, 2)
		if !loggedOnFailure(ctx) || loggedOnFailure(context.Background()) {
			t.Fatal("the context does not tell whether it carries a kept log")
		}
		logger := klog.FromContext(ctx)
		logger.Info("Scaling up", "nodeGroup", "g", "from", 0, "to", 2)
		logger.V(2).Info("Node not ready", "node", "g-1")
		logger.V(3).Info("too detailed")
		tb.failed = failed
		tb.end()
		out := strings.Join(tb.logs, "\n")
		switch {
		case !failed && out != "":
			t.Fatalf("a passing test printed %q", out)
		case failed && (!strings.Contains(out, `"Scaling up" nodeGroup="g" from=0 to=2`) || !strings.Contains(out, "Node not ready") ||
			strings.Contains(out, "too detailed")):
			t.Fatalf("a failed test printed %q, want the log at verbosity 2", out)
		}
	}
}

func TestLogTailKeepsTheEnd(t *testing.T) {
	var b lockedBuffer
	fmt.Fprintf(&b, "%s", strings.Repeat("a", 10))
	fmt.Fprintf(&b, "end")
	if got := b.tail(5); got != "…aaend" {
		t.Fatalf("tail %q", got)
	}
	if got := b.tail(100); got != strings.Repeat("a", 10)+"end" {
		t.Fatalf("short log cut: %q", got)
	}
}
