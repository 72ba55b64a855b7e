package testenv

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// LogVerbosity is the verbosity of the logs tests keep for their failures.
const LogVerbosity = 4

// logTail is how much of a log a failing test prints: its end, where the
// failure is.
const logTail = 128 << 10

// LogAlwaysEnv, set to "true", makes LogOnFailure print the log of a test
// that passed too: how figures that only the log gives (a latency the test
// does not assert) are read from a passing run.
const LogAlwaysEnv = "TIDAL_TEST_LOG_ALWAYS"

// lockedBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// loggedKey marks a context whose logger LogOnFailure made.
type loggedKey struct{}

// LogOnFailure returns ctx with a logger at the given verbosity whose output
// is kept in memory and printed (its last 128 KiB) only if the test fails
// (or if LogAlwaysEnv is "true"), so a failure can be told from the test's
// output alone. Everything run
// with the context logs there: tidal, the clouds, the loops.
func LogOnFailure(ctx context.Context, t testing.TB, verbosity int) context.Context {
	return logOnFailure(ctx, t, verbosity, "tidal's log")
}

func logOnFailure(ctx context.Context, t testing.TB, verbosity int, title string) context.Context {
	buf := &lockedBuffer{}
	always := os.Getenv(LogAlwaysEnv) == "true"
	t.Cleanup(func() {
		if t.Failed() || always {
			t.Logf("%s (verbosity %d):\n%s", title, verbosity, buf.tail(logTail))
		}
	})
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity), textlogger.Output(buf)))
	return klog.NewContext(context.WithValue(ctx, loggedKey{}, true), logger)
}

// loggedOnFailure reports whether ctx carries a logger from LogOnFailure.
func loggedOnFailure(ctx context.Context) bool { return ctx.Value(loggedKey{}) != nil }
