package explain

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidal-autoscaler/tidal/cloudprovider/snapshot"
)

// The same object twice, in one document or in two, in a List or not, is
// an error naming it and both places, not a panic of the client the
// snapshot is served from; so is an object without a name. The same name
// in another namespace or of another kind is another object.
func TestLoadRefusesTheSameObjectTwice(t *testing.T) {
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: small-a}\n"
	pod := func(ns string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: small-a, namespace: " + ns + "}\n"
	}
	list := "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: small-a}}\n- {apiVersion: v1, kind: Node, metadata: {name: small-a}}\n"
	for _, tc := range []struct{ in, want string }{
		{node + "---\n" + node, "document 2: Node small-a is in the snapshot twice (also document 1)"},
		{list, "document 1, item 2: Node small-a is in the snapshot twice (also document 1, item 1)"},
		{pod("a") + "---\n" + pod("a"), "document 2: Pod a/small-a is in the snapshot twice"},
		{"apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n", "document 1: a Node without a name"},
	} {
		_, err := Load(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	s, err := Load(strings.NewReader(node + "---\n" + pod("a") + "---\n" + pod("b")))
	if err != nil || len(s.Objects) != 3 {
		t.Fatalf("a Node and Pods of the same name in two namespaces: %v", err)
	}
	if _, err := FileSource(s, snapshot.Config{}, plainFactory); err != nil {
		t.Errorf("FileSource: %v", err)
	}
}

// endless is a reader without end, as /dev/zero.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += int64(len(p))
	return len(p), nil
}

// Load reads at most its bound: an input without end (--from-file
// /dev/zero) stops with *TooLargeError after reading just past it; an
// input of exactly the bound is read.
func TestLoadReadsAtMostItsBound(t *testing.T) {
	const max = 1 << 20
	src := &endless{}
	_, err := LoadAtMost(src, max)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Max != max || !strings.Contains(err.Error(), "--from-file-max-bytes") {
		t.Fatalf("LoadAtMost(endless) = %v, want a TooLargeError naming the flag", err)
	}
	if src.read > max+64<<10 {
		t.Errorf("read %d bytes of an endless input, bound %d", src.read, max)
	}
	if f, err := os.Open("/dev/zero"); err == nil {
		defer f.Close()
		if _, err := LoadAtMost(f, max); !errors.As(err, &tooLarge) {
			t.Errorf("LoadAtMost(/dev/zero) = %v, want a TooLargeError", err)
		}
	}
	doc := []byte("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
	if _, err := LoadAtMost(bytes.NewReader(doc), int64(len(doc))); err != nil {
		t.Errorf("a snapshot of exactly the bound: %v", err)
	}
	if _, err := LoadAtMost(bytes.NewReader(doc), int64(len(doc))-1); !errors.As(err, &tooLarge) {
		t.Errorf("a snapshot one byte over the bound: %v", err)
	}
}

// FuzzLoadSnapshot feeds arbitrary YAML or JSON to the snapshot loader and
// serves what it accepts as the explain commands do: errors, never a panic,
// and never more read than the bound.
func FuzzLoadSnapshot(f *testing.F) {
	for _, name := range []string{"cluster.yaml"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"apiVersion: v1\nkind: Node\nmetadata: {name: small-a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: small-a}\n",
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d"},"spec":{"nodeName":"n"}}]}`,
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {node.kubernetes.io/instance-type: x}}\nstatus: {allocatable: {cpu: 1e-2000000000}}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\nspec: {replicas: -1}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tidal-schedules, namespace: kube-system}\ndata: {x: '['}\n",
		"- a\n- b\n", "null", "apiVersion: v1\nkind: List\nitems: 3\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 1 << 16
		r := &countingReader{r: bytes.NewReader(data)}
		s, err := LoadAtMost(r, max)
		if r.n > max+1 {
			t.Fatalf("read %d bytes, bound %d", r.n, max)
		}
		if err != nil {
			return
		}
		_, _ = FileSource(s, snapshot.Config{}, plainFactory) // an error is an answer; a panic fails
	})
}

// countingReader counts what is read of r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
