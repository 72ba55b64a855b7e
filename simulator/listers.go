package simulator

import (
	"k8s.io/client-go/informers"
)

// Listers are where the scheduler's plugins read the objects that are not
// in the snapshot: namespaces (pod affinity's namespace selectors) and the
// storage objects of the volume plugins (claims, volumes, storage classes,
// CSI nodes and drivers, storage capacities, volume attachments).
type Listers interface {
	// Informers serves those objects' listers to the plugins. The checker
	// only reads from it; the caller starts it.
	Informers() informers.SharedInformerFactory
	// Version changes whenever one of those objects changes: a result
	// computed with the same version and snapshot version still holds.
	Version() uint64
}

// emptyListers serve no objects: a cluster without volumes or namespace
// selectors. The factory is never started, so its listers stay empty and
// its client is never called.
type emptyListers struct {
	factory informers.SharedInformerFactory
}

func newEmptyListers() emptyListers {
	return emptyListers{factory: informers.NewSharedInformerFactory(nil, 0)}
}

func (e emptyListers) Informers() informers.SharedInformerFactory { return e.factory }
func (emptyListers) Version() uint64                              { return 0 }
