package simulator

import (
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// listerChanges counts changes to the objects the scheduler's plugins read
// from informers rather than from the snapshot: namespaces (pod affinity's
// namespace selectors) and the storage objects of the volume plugins. A
// result computed with the same count and snapshot version still holds.
type listerChanges struct{ n atomic.Uint64 }

// watchListers follows the informers of factory that the default profile's
// plugins use (so no watch is added).
func watchListers(factory informers.SharedInformerFactory) (*listerChanges, error) {
	lc := &listerChanges{}
	watched := []cache.SharedIndexInformer{
		factory.Core().V1().Namespaces().Informer(),
		factory.Core().V1().PersistentVolumeClaims().Informer(),
		factory.Core().V1().PersistentVolumes().Informer(),
		factory.Storage().V1().StorageClasses().Informer(),
		factory.Storage().V1().CSINodes().Informer(),
		factory.Storage().V1().CSIDrivers().Informer(),
		factory.Storage().V1().CSIStorageCapacities().Informer(),
		factory.Storage().V1().VolumeAttachments().Informer(),
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { lc.n.Add(1) },
		DeleteFunc: func(any) { lc.n.Add(1) },
		UpdateFunc: func(oldObj, newObj any) {
			// A resync hands the same object again: nothing changed.
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if !ok1 || !ok2 || o.GetResourceVersion() != n.GetResourceVersion() {
				lc.n.Add(1)
			}
		},
	}
	for _, inf := range watched {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("follow the scheduler plugins' informers: %w", err)
		}
	}
	return lc, nil
}
