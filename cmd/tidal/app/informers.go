package app

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/trim"
)

// NewInformerFactory is the informer factory both loops share. Its
// informers trim every object before they cache it (trim.Object): managed
// fields, and on pods and nodes what tidal never reads, which is most of a
// large cluster's cache; and pods share what replicas have in common
// (trim.Sharer), one Sharer for the factory's informers.
func NewInformerFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trim.NewSharer().Transform))
}
