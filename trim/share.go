package trim

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Sharer makes the pods an informer caches share what replicas of one
// workload have in common, instead of each keeping its own copy: the
// containers; the rest of the spec but the node and host names (volumes,
// tolerations, affinity, selectors...); and the namespace, generated name
// prefix, labels and owners. These are most of a trimmed pod; what is left
// its own is the Pod struct, its name, UID, node and status.
//
// Sharing is safe because cached objects are read-only (client-go's
// contract for what listers and informers return; tidal copies a pod
// before it changes it, and never writes a cached pod back to the API).
//
// Parts are found by the SHA-256 of their protobuf encoding (which sorts
// map keys), so only byte-identical parts are shared. An entry is anchored
// by a weak pointer to an object every pod sharing it references (the
// containers array, the spec's securityContext, which the API server
// defaults, the owner references array) and holds the rest strongly; once
// the last such pod is gone, the anchor is collected and a cleanup removes
// the entry. The tables thus hold one entry per distinct part of the live
// pods, whatever the churn, and nothing is held for a pod the cache
// dropped. (Reference counts would need every deletion and replacement
// the informer sees; weak pointers need none.)
//
// A Sharer is safe for concurrent use: the informers of one factory call
// their transform from their own goroutines.
type Sharer struct {
	mu    sync.Mutex
	specs map[[sha256.Size]byte]*sharedSpec
	ctrs  map[[sha256.Size]byte]*sharedContainers
	metas map[[sha256.Size]byte]*sharedMeta
	buf   []byte // encoding scratch, under mu
}

// sharedSpec is a pod spec replicas share but its containers, node name
// and host name; its SecurityContext is empty too: securityContext is the
// pointer every sharing pod references (the API server defaults it), which
// anchors the entry.
type sharedSpec struct {
	securityContext weak.Pointer[corev1.PodSecurityContext]
	spec            corev1.PodSpec
}

// sharedContainers is a containers array replicas share (n long).
type sharedContainers struct {
	array weak.Pointer[corev1.Container]
	n     int
}

// sharedMeta is the metadata replicas share; owners is the shared owner
// references array (n long).
type sharedMeta struct {
	owners                  weak.Pointer[metav1.OwnerReference]
	n                       int
	namespace, generateName string
	labels                  map[string]string
}

// NewSharer returns a Sharer with empty tables.
func NewSharer() *Sharer {
	return &Sharer{specs: map[[sha256.Size]byte]*sharedSpec{}, ctrs: map[[sha256.Size]byte]*sharedContainers{},
		metas: map[[sha256.Size]byte]*sharedMeta{}}
}

var _ cache.TransformFunc = (*Sharer)(nil).Transform

// Transform trims obj (Object) and, when it is a pod, makes it share its
// common parts (Pod): the transform function of tidal's informers.
func (s *Sharer) Transform(obj any) (any, error) {
	out, err := Object(obj)
	if err != nil {
		return nil, err
	}
	if p, ok := out.(*corev1.Pod); ok {
		if err := s.Pod(p); err != nil {
			return nil, fmt.Errorf("share the parts of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return out, nil
}

// Pod replaces p's spec (but its node and host names) and its namespace,
// generated name, labels and owners with those of an earlier pod where
// they are identical, or makes them the ones later pods share.
func (s *Sharer) Pod(p *corev1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.containers(p); err != nil {
		return fmt.Errorf("containers: %w", err)
	}
	if err := s.spec(p); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if err := s.meta(p); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	return nil
}

// Len is the number of entries (shared specs, containers, metadata) the
// Sharer holds.
func (s *Sharer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.specs) + len(s.ctrs) + len(s.metas)
}

// containers shares p's containers.
func (s *Sharer) containers(p *corev1.Pod) error {
	if len(p.Spec.Containers) == 0 {
		return nil // not an API server's pod
	}
	key, err := s.listKey(p.Spec.Containers)
	if err != nil {
		return err
	}
	if e := s.ctrs[key]; e != nil {
		if c := e.array.Value(); c != nil {
			p.Spec.Containers = unsafe.Slice(c, e.n)
			return nil
		}
	}
	// A fresh array, so that the anchor is an object of its own that
	// exactly the sharing pods reference.
	p.Spec.Containers = slices.Clone(p.Spec.Containers)
	s.ctrs[key] = &sharedContainers{array: weak.Make(&p.Spec.Containers[0]), n: len(p.Spec.Containers)}
	runtime.AddCleanup(&p.Spec.Containers[0], s.dropContainers, key)
	return nil
}

// spec shares p's spec but its containers (see containers) and its node
// and host names, which are what differs between replicas, a
// StatefulSet's too.
func (s *Sharer) spec(p *corev1.Pod) error {
	if p.Spec.SecurityContext == nil {
		return nil // not defaulted by an API server: nothing to anchor on
	}
	own := p.Spec
	p.Spec.Containers, p.Spec.NodeName, p.Spec.Hostname = nil, "", ""
	key, err := s.key(&p.Spec)
	p.Spec = own
	if err != nil {
		return err
	}
	if e := s.specs[key]; e != nil {
		if sc := e.securityContext.Value(); sc != nil {
			p.Spec = e.spec
			p.Spec.SecurityContext = sc
			p.Spec.Containers, p.Spec.NodeName, p.Spec.Hostname = own.Containers, own.NodeName, own.Hostname
			return nil
		}
	}
	p.Spec.SecurityContext = p.Spec.SecurityContext.DeepCopy() // an anchor of its own
	e := &sharedSpec{securityContext: weak.Make(p.Spec.SecurityContext), spec: p.Spec}
	e.spec.SecurityContext, e.spec.Containers, e.spec.NodeName, e.spec.Hostname = nil, nil, "", ""
	s.specs[key] = e
	runtime.AddCleanup(p.Spec.SecurityContext, s.dropSpec, key)
	return nil
}

// meta shares p's namespace, generated name prefix, labels and owner
// references. Pods without owners keep theirs: the owners anchor the entry.
func (s *Sharer) meta(p *corev1.Pod) error {
	if len(p.OwnerReferences) == 0 {
		return nil
	}
	m := metav1.ObjectMeta{Namespace: p.Namespace, GenerateName: p.GenerateName, Labels: p.Labels, OwnerReferences: p.OwnerReferences}
	key, err := s.key(&m)
	if err != nil {
		return err
	}
	if e := s.metas[key]; e != nil {
		if o := e.owners.Value(); o != nil {
			p.Namespace, p.GenerateName, p.Labels = e.namespace, e.generateName, e.labels
			p.OwnerReferences = unsafe.Slice(o, e.n)
			return nil
		}
	}
	p.OwnerReferences = slices.Clone(p.OwnerReferences)
	s.metas[key] = &sharedMeta{owners: weak.Make(&p.OwnerReferences[0]), n: len(p.OwnerReferences),
		namespace: p.Namespace, generateName: p.GenerateName, labels: p.Labels}
	runtime.AddCleanup(&p.OwnerReferences[0], s.dropMeta, key)
	return nil
}

// encodable is what the generated protobuf code of API types provides.
type encodable interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// key is the SHA-256 of v's protobuf encoding. The caller holds mu.
func (s *Sharer) key(v encodable) ([sha256.Size]byte, error) {
	n := v.Size()
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	buf := s.buf[:n]
	if _, err := v.MarshalToSizedBuffer(buf); err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("encode: %w", err)
	}
	return sha256.Sum256(buf), nil
}

// listKey is the SHA-256 of the encodings of a list's items, each preceded
// by its length. The caller holds mu.
func (s *Sharer) listKey(items []corev1.Container) ([sha256.Size]byte, error) {
	h := sha256.New()
	for i := range items {
		n := items[i].Size()
		if cap(s.buf) < n+binary.MaxVarintLen64 {
			s.buf = make([]byte, n+binary.MaxVarintLen64)
		}
		buf := binary.AppendUvarint(s.buf[:0], uint64(n))
		k := len(buf)
		if _, err := items[i].MarshalToSizedBuffer(s.buf[k : k+n]); err != nil {
			return [sha256.Size]byte{}, fmt.Errorf("encode: %w", err)
		}
		h.Write(s.buf[:k+n])
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, nil
}

// dropSpec removes the spec entry of key once no pod shares it any more
// (its anchor is gone); a newer entry under the same key stays.
func (s *Sharer) dropSpec(key [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.specs[key]; e != nil && e.securityContext.Value() == nil {
		delete(s.specs, key)
	}
}

// dropContainers is dropSpec for containers entries.
func (s *Sharer) dropContainers(key [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.ctrs[key]; e != nil && e.array.Value() == nil {
		delete(s.ctrs, key)
	}
}

// dropMeta is dropSpec for metadata entries.
func (s *Sharer) dropMeta(key [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.metas[key]; e != nil && e.owners.Value() == nil {
		delete(s.metas, key)
	}
}
