package benchload

import (
	"bytes"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/trim"
)

// watchBatch is how many stored objects are sent before the informer
// receives them.
const watchBatch = 500

// watch carries benchgen's stored objects to an informer as a watch
// stream (client-go's streaming list) does: every object is encoded as
// JSON when the API server has stored it, and decoded and transformed by
// the informer one after the other. The informer's side runs in batches
// of watchBatch objects so that, as in tidal, what it keeps is allocated
// among the garbage of decoding and trimming only, not among the
// generator's (building stored forms and their managed fields): the
// generator's garbage is no part of tidal's heap.
type watch struct {
	wire   *json.Serializer
	sharer *trim.Sharer
	sent   []sentObject
	cached []runtime.Object // decoded and transformed, in the order sent
}

type sentObject struct {
	gvk  schema.GroupVersionKind
	json []byte
}

func newWatch() *watch {
	return &watch{
		wire:   json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}),
		sharer: trim.NewSharer(),
	}
}

// send is benchgen's transform: it encodes obj, empties it and returns a
// nil of its type, so that the cluster drops it: the API server's copy is
// not in tidal's memory (the generator's blocks of pods are garbage as
// soon as they are sent), and into puts the informer's in its place.
func (w *watch) send(obj any) (any, error) {
	in, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("send a %T: not an API object", obj)
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(in)
	if err != nil {
		return nil, fmt.Errorf("send a %T: %w", obj, err)
	}
	var buf bytes.Buffer
	if err := w.wire.Encode(in, &buf); err != nil {
		return nil, fmt.Errorf("encode a %T: %w", obj, err)
	}
	w.sent = append(w.sent, sentObject{gvk: gvks[0], json: buf.Bytes()})
	reflect.ValueOf(obj).Elem().SetZero()
	dropped := reflect.Zero(reflect.TypeOf(obj)).Interface()
	if len(w.sent) == watchBatch {
		return dropped, w.receive()
	}
	return dropped, nil
}

// receive decodes and transforms the objects sent, as an informer does.
func (w *watch) receive() error {
	for i, s := range w.sent {
		out, _, err := w.wire.Decode(s.json, &s.gvk, nil)
		if err != nil {
			return fmt.Errorf("decode a %s: %w", s.gvk.Kind, err)
		}
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as a List's items
		cached, err := w.sharer.Transform(out)
		if err != nil {
			return err
		}
		w.cached = append(w.cached, cached.(runtime.Object))
		w.sent[i] = sentObject{}
	}
	w.sent = w.sent[:0]
	return nil
}

// into puts the informer's objects in place of c's dropped ones, in order.
func (w *watch) into(c *benchgen.Cluster) error {
	if err := w.receive(); err != nil {
		return err
	}
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	var rss []*appsv1.ReplicaSet
	for _, obj := range w.cached {
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
	w.cached = nil
	return nil
}
