// Package explain observes and decides once as the node loop does, acting
// on nothing, over a saved cluster or a live one, and says what it
// concluded: why a pod waits and where it would go, why a node stays. The
// decisions are the node loop's own (core.Decider.Decide, rendered by
// core.DecisionsOf); no loop runs. This package gathers the input and
// words the answer.
package explain

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Snapshot is a cluster's objects read from a file.
type Snapshot struct {
	Objects []runtime.Object
	Nodes   []*corev1.Node
	// Skipped counts the objects of kinds tidal does not know, by
	// apiVersion and kind.
	Skipped map[string]int
	// seen is where each object was read, to refuse it a second time.
	seen map[objectKey]string
}

// objectKey identifies an object of a snapshot.
type objectKey struct{ group, kind, namespace, name string }

// SkippedNote says which kinds were skipped, empty when none was.
func (s *Snapshot) SkippedNote() string {
	if len(s.Skipped) == 0 {
		return ""
	}
	var kinds []string
	for k, n := range s.Skipped {
		kinds = append(kinds, fmt.Sprintf("%s (%d)", k, n))
	}
	sort.Strings(kinds)
	return "skipped objects of unknown kinds: " + strings.Join(kinds, ", ")
}

// SnapshotProviderIDPrefix is given, followed by the node's name, to nodes
// of the snapshot without a providerID, so that node groups' instances
// name them.
const SnapshotProviderIDPrefix = "snapshot:///"

// Load reads YAML or JSON documents, each an object or a List of objects
// (what `kubectl get ... -o yaml` prints), at most DefaultMaxSnapshotBytes.
// Objects of kinds the Kubernetes client does not know are skipped and
// counted; a document that does not parse, an object of a known kind that
// does not convert, one without a name, or the same object twice is an
// error naming it.
func Load(r io.Reader) (*Snapshot, error) { return LoadAtMost(r, DefaultMaxSnapshotBytes) }

// LoadAtMost is Load reading at most max bytes of r: more is an error
// (*TooLargeError), and nothing of it is kept.
func LoadAtMost(r io.Reader, max int64) (*Snapshot, error) {
	s := &Snapshot{Skipped: map[string]int{}, seen: map[objectKey]string{}}
	dec := yaml.NewYAMLOrJSONDecoder(&boundedReader{r: r, max: max}, 4096)
	for doc := 1; ; doc++ {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if tooLarge := (*TooLargeError)(nil); errors.As(err, &tooLarge) {
			return nil, tooLarge
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := s.add(&u, fmt.Sprintf("document %d", doc)); err != nil {
			return nil, err
		}
	}
	if len(s.Objects) == 0 {
		return nil, errors.New("no Kubernetes object found: want the output of `kubectl get nodes,pods,... -A -o yaml`")
	}
	return s, nil
}

// add adds an object, or each item of a List.
func (s *Snapshot) add(u *unstructured.Unstructured, where string) error {
	if u.IsList() {
		list, err := u.ToList()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for i := range list.Items {
			if err := s.add(&list.Items[i], fmt.Sprintf("%s, item %d", where, i+1)); err != nil {
				return err
			}
		}
		return nil
	}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return fmt.Errorf("%s: an object without apiVersion or kind", where)
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		s.Skipped[u.GetAPIVersion()+" "+gvk.Kind]++
		return nil
	}
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("%s: %s %s: %w", where, gvk.Kind, name, err)
	}
	if err := s.once(obj, gvk.Group, gvk.Kind, name, where); err != nil {
		return err
	}
	if n, ok := obj.(*corev1.Node); ok {
		if n.Spec.ProviderID == "" {
			n.Spec.ProviderID = SnapshotProviderIDPrefix + n.Name
		}
		s.Nodes = append(s.Nodes, n)
	}
	s.Objects = append(s.Objects, obj)
	return nil
}

// once records where the object was read, and refuses one without a name
// or read before (a client, as the API server, holds each object once).
func (s *Snapshot) once(obj runtime.Object, group, kind, name, where string) error {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetName() == "" {
		return fmt.Errorf("%s: a %s without a name", where, kind)
	}
	key := objectKey{group: group, kind: kind, namespace: m.GetNamespace(), name: m.GetName()}
	if first, ok := s.seen[key]; ok {
		return fmt.Errorf("%s: %s %s is in the snapshot twice (also %s): keep one", where, kind, name, first)
	}
	s.seen[key] = where
	return nil
}
