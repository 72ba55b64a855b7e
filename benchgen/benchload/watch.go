package benchload

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/trim"
)

// watch carries benchgen's stored objects to an informer as a watch stream
// (client-go's streaming list, on by default since client-go 1.35, which
// applies the informer's transform to each object as it arrives) does:
// every object is encoded in Kubernetes' protobuf once the API server has
// stored it (tidal's clients ask for it, --kube-api-content-type), and
// decoded and transformed by the informer one after the other.
//
// The API server is another process: its copies, and the generator that
// stands in for it here, are no part of tidal's memory. So the stream is
// written to a file first (send), the generator's objects are dropped as
// they are written, and only then does the informer's side read the file
// (receive), so that what the process holds while it receives is what
// tidal's informers hold, and the process's peak RSS can be restarted in
// between (see forgetPeak).
type watch struct {
	wire   *protobuf.Serializer
	sharer *trim.Sharer
	file   *os.File
	out    *bufio.Writer
	buf    bytes.Buffer
	// unlinked is set once the file's name is gone (see newWatch).
	unlinked bool
}

// The kinds of objects a stream carries, the first byte of each record.
const (
	recordNode byte = iota
	recordPod
	recordReplicaSet
)

// recordGVK is the kind of object a record's first byte names.
func recordGVK(kind byte) (schema.GroupVersionKind, bool) {
	switch kind {
	case recordNode:
		return corev1.SchemeGroupVersion.WithKind("Node"), true
	case recordPod:
		return corev1.SchemeGroupVersion.WithKind("Pod"), true
	case recordReplicaSet:
		return appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), true
	}
	return schema.GroupVersionKind{}, false
}

func newWatch() (*watch, error) {
	f, err := os.CreateTemp("", "tidal-benchload-*.stream")
	if err != nil {
		return nil, fmt.Errorf("create the stream's file: %w", err)
	}
	// Unlinked at once where the system allows it (the open file lives on
	// until closed), so that a process killed while loading leaves no
	// gigabytes behind; elsewhere close removes it.
	unlinked := os.Remove(f.Name()) == nil
	return &watch{
		unlinked: unlinked,
		wire:     protobuf.NewSerializer(scheme.Scheme, scheme.Scheme),
		sharer:   trim.NewSharer(),
		file:     f,
		out:      bufio.NewWriterSize(f, 1<<20),
	}, nil
}

// close closes and removes the stream's file.
func (w *watch) close() {
	_ = w.file.Close()
	if !w.unlinked {
		_ = os.Remove(w.file.Name())
	}
}

// send is benchgen's transform: it writes obj to the stream (a kind byte,
// the length and the encoded object), empties it and returns a nil of its type, so
// that the cluster drops it (the generator's blocks of pods are garbage as
// soon as they are sent); receive puts the informer's in its place.
func (w *watch) send(obj any) (any, error) {
	kind, err := recordKind(obj)
	if err != nil {
		return nil, err
	}
	w.buf.Reset()
	if err := w.wire.Encode(obj.(runtime.Object), &w.buf); err != nil {
		return nil, fmt.Errorf("encode a %T: %w", obj, err)
	}
	var head [1 + binary.MaxVarintLen64]byte
	head[0] = kind
	n := 1 + binary.PutUvarint(head[1:], uint64(w.buf.Len()))
	if _, err := w.out.Write(head[:n]); err != nil {
		return nil, fmt.Errorf("write the stream: %w", err)
	}
	if _, err := w.out.Write(w.buf.Bytes()); err != nil {
		return nil, fmt.Errorf("write the stream: %w", err)
	}
	reflect.ValueOf(obj).Elem().SetZero()
	return reflect.Zero(reflect.TypeOf(obj)).Interface(), nil
}

func recordKind(obj any) (byte, error) {
	switch obj.(type) {
	case *corev1.Node:
		return recordNode, nil
	case *corev1.Pod:
		return recordPod, nil
	case *appsv1.ReplicaSet:
		return recordReplicaSet, nil
	}
	return 0, fmt.Errorf("send a %T: not a kind the stream carries", obj)
}

// receive reads the stream back, decodes and transforms every object as
// an informer does, and puts the informer's objects in place of c's
// dropped ones, in the order sent.
func (w *watch) receive(c *benchgen.Cluster) error {
	if err := w.out.Flush(); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	if _, err := w.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read the stream: %w", err)
	}
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	var rss []*appsv1.ReplicaSet
	in := bufio.NewReaderSize(w.file, 1<<20)
	var data []byte
	for {
		obj, next, err := w.next(in, data)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		data = next
		switch o := obj.(type) {
		case *corev1.Node:
			nodes = append(nodes, o)
		case *corev1.Pod:
			pods = append(pods, o)
		case *appsv1.ReplicaSet:
			rss = append(rss, o)
		default:
			return fmt.Errorf("received a %T", obj)
		}
	}
	if len(nodes) != len(c.Nodes) || len(pods) != len(c.RunningPods)+len(c.PendingPods) || len(rss) != len(c.ReplicaSets) {
		return fmt.Errorf("received %d nodes, %d pods and %d ReplicaSets of %d, %d and %d",
			len(nodes), len(pods), len(rss), len(c.Nodes), len(c.RunningPods)+len(c.PendingPods), len(c.ReplicaSets))
	}
	n := len(c.RunningPods)
	c.Nodes, c.RunningPods, c.PendingPods, c.ReplicaSets = nodes, pods[:n:n], pods[n:], rss
	return nil
}

// next reads, decodes and transforms the stream's next object; data is a
// buffer to read its encoding into (the decoder copies what it keeps), given
// back grown as needed. io.EOF means the stream ended cleanly.
func (w *watch) next(in *bufio.Reader, data []byte) (runtime.Object, []byte, error) {
	kind, err := in.ReadByte()
	if err != nil {
		return nil, data, err
	}
	gvk, ok := recordGVK(kind)
	if !ok {
		return nil, data, fmt.Errorf("read the stream: unknown record kind %d", kind)
	}
	size, err := binary.ReadUvarint(in)
	if err != nil {
		return nil, data, fmt.Errorf("read the stream: a %s's length: %w", gvk.Kind, io.ErrUnexpectedEOF)
	}
	if uint64(cap(data)) < size {
		data = make([]byte, size)
	}
	data = data[:size]
	if _, err := io.ReadFull(in, data); err != nil {
		return nil, data, fmt.Errorf("read the stream: a %s: %w", gvk.Kind, err)
	}
	out, _, err := w.wire.Decode(data, &gvk, nil)
	if err != nil {
		return nil, data, fmt.Errorf("decode a %s: %w", gvk.Kind, err)
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as a List's items
	cached, err := w.sharer.Transform(out)
	if err != nil {
		return nil, data, err
	}
	return cached.(runtime.Object), data, nil
}
