package explain

import (
	"fmt"
	"io"
)

// DefaultMaxSnapshotBytes is the most of a snapshot Load reads (512 MiB):
// more than `kubectl get ... -o yaml` prints for a cluster of several
// thousand nodes, and little enough that reading a device or a pipe
// without end (--from-file /dev/zero) stops with an error, not with the
// machine's memory.
const DefaultMaxSnapshotBytes int64 = 512 << 20

// TooLargeError is Load's error for input beyond its bound.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the snapshot is larger than %d bytes (--from-file-max-bytes): not read", e.Max)
}

// boundedReader reads at most max bytes of r, and fails with
// *TooLargeError as soon as r holds more.
type boundedReader struct {
	r    io.Reader
	max  int64
	read int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if rest := b.max + 1 - b.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.max {
		return 0, &TooLargeError{Max: b.max}
	}
	return n, err
}
