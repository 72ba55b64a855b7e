package testenv

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

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

// LogOnFailure returns ctx with a logger at the given verbosity whose output
// is kept in memory and printed (its last 64 KiB) only if the test fails.
func LogOnFailure(ctx context.Context, t *testing.T, verbosity int) context.Context {
	buf := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tidal's log (verbosity %d):\n%s", verbosity, buf.tail(64<<10))
		}
	})
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity), textlogger.Output(buf)))
	return klog.NewContext(ctx, logger)
}
