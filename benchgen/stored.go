package benchgen

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StoreOptions tune Store.
type StoreOptions struct {
	// Transform, when set, is applied to every object once it is in its
	// stored form, as an informer applies its transform function to every
	// object it receives; the cluster keeps what it returns (a nil of the
	// object's type drops it). Objects are transformed one at a time, so
	// what a transform drops is garbage at once, as in an informer.
	Transform func(obj any) (any, error)
}

// Store turns the objects of c, in place, into what a Kubernetes API server
// stores for them and its listers return:
//
//   - every pod has an image (PauseImage), is defaulted as the API server
//     defaults it (SetObjectDefaults_Pod of k8s.io/kubernetes/pkg/apis/core/v1),
//     and is admitted as kube-apiserver's default admission plugins admit
//     it (see Admit);
//   - running pods carry the status their kubelet writes, pending pods the
//     scheduler's PodScheduled=False/Unschedulable condition (see
//     RunningStatus, UnschedulableStatus);
//   - nodes carry what a kubelet registers and reports (see Register);
//   - ReplicaSets are defaulted and their template has the image;
//   - every object has a random UUID (owner references follow), a
//     resourceVersion, the generation the API server sets, and managedFields
//     as its field manager writes them for the components that made the
//     object: kube-controller-manager creating pods and ReplicaSets, the
//     kubelet registering nodes and writing statuses, the scheduler.
//
// Object names, labels, requests and placement stay as generated. The
// canonical listing no longer holds afterwards (every pod tolerates the two
// default taints): hash a cluster before storing it. Random parts (UUIDs,
// the token volume suffixes) are drawn from c.Params.Seed on streams of
// their own, so a stored cluster is the same on every run.
func (c *Cluster) Store(o StoreOptions) error {
	s, err := newStorer(c, o)
	if err != nil {
		return err
	}
	return s.run()
}

// run stores every object.
func (s *storer) run() error {
	if err := s.nodes(); err != nil {
		return err
	}
	if err := s.replicaSets(); err != nil {
		return err
	}
	if err := s.runningPods(); err != nil {
		return err
	}
	return s.pendingPods()
}

// RNG streams of the stored form (the spec's streams are 1 to 3).
const (
	streamStoredUID   uint64 = 4
	streamTokenVolume uint64 = 5
)

// UID kinds: the k argument of R for the two halves of an object's UUID.
const (
	uidNode uint64 = iota * 2
	uidReplicaSet
	uidRunningPod
	uidPendingPod
)

// storer carries the state of one Store call.
type storer struct {
	c      *Cluster
	o      StoreOptions
	rng    rng
	fields *fieldManagers
	// uids maps the generated UIDs of ReplicaSets to their stored ones,
	// for owner references.
	uids map[types.UID]types.UID
	rv   int64
}

func newStorer(c *Cluster, o StoreOptions) (*storer, error) {
	fm, err := newFieldManagers()
	if err != nil {
		return nil, err
	}
	return &storer{c: c, o: o, rng: rng{seed: c.Params.Seed}, fields: fm, uids: map[types.UID]types.UID{}, rv: 1000}, nil
}

// meta sets what the API server sets on every object it stores.
func (s *storer) meta(m *metav1.ObjectMeta, kind uint64, i int, generation int64) {
	m.UID = s.uuid(kind, i)
	s.rv++
	m.ResourceVersion = strconv.FormatInt(s.rv, 10)
	m.Generation = generation
}

// uuid draws the random (version 4) UUID of object i of a kind.
func (s *storer) uuid(kind uint64, i int) types.UID {
	hi := s.rng.r(streamStoredUID, uint64(i), kind)
	lo := s.rng.r(streamStoredUID, uint64(i), kind+1)
	hi = hi&^0xf000 | 0x4000     // version 4
	lo = lo&^(0xc<<60) | 0x8<<60 // RFC 4122 variant
	return types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x",
		hi>>32, hi>>16&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff))
}

// storeEach gives every object of objs its stored form with store, then
// passes it to the options' transform and keeps what that returns.
func storeEach[T metav1.Object](s *storer, objs []T, store func(i int, obj T) error) error {
	for i, obj := range objs {
		if err := store(i, obj); err != nil {
			return err
		}
		var err error
		if objs[i], err = transformed(s, obj, obj.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// transformed passes obj, in its stored form, to the options' transform
// and returns what the transform returns, which must be of obj's type.
func transformed[T any](s *storer, obj T, name string) (T, error) {
	if s.o.Transform == nil {
		return obj, nil
	}
	out, err := s.o.Transform(obj)
	if err != nil {
		return obj, fmt.Errorf("transform %s: %w", name, err)
	}
	t, ok := out.(T)
	if !ok {
		return obj, fmt.Errorf("transform %s: returned a %T, want a %T", name, out, obj)
	}
	return t, nil
}

// later is t plus d, for the times of what happens after creation.
func later(t metav1.Time, d time.Duration) metav1.Time { return metav1.NewTime(t.Add(d)) }
