// Package factorylisters serves the scheduler plugins' listers to a
// simulator.Checker from a shared informer factory, counting changes to the
// objects they read so that a decision over unchanged inputs can be reused.
package factorylisters

import (
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Listers are a factory's listers with a change count.
type Listers struct {
	factory informers.SharedInformerFactory
	n       atomic.Uint64
}

// New follows the informers of factory that the default scheduler
// profile's plugins use (so no watch is added). The caller starts factory.
func New(factory informers.SharedInformerFactory) (*Listers, error) {
	l := &Listers{factory: factory}
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
		AddFunc:    func(any) { l.n.Add(1) },
		DeleteFunc: func(any) { l.n.Add(1) },
		UpdateFunc: l.updated,
	}
	for _, inf := range watched {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("follow the scheduler plugins' informers: %w", err)
		}
	}
	return l, nil
}

// updated counts an update, unless it is a resync handing the same object
// again.
func (l *Listers) updated(oldObj, newObj any) {
	o, ok1 := oldObj.(metav1.Object)
	n, ok2 := newObj.(metav1.Object)
	if !ok1 || !ok2 || o.GetResourceVersion() != n.GetResourceVersion() {
		l.n.Add(1)
	}
}

// Informers is the factory.
func (l *Listers) Informers() informers.SharedInformerFactory { return l.factory }

// Version counts the changes seen so far.
func (l *Listers) Version() uint64 { return l.n.Load() }
