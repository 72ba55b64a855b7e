package controller

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// PodAutoscalersServed reports whether the API server serves
// podautoscalers.autoscaling.tidal.dev/v1alpha1, i.e. whether the CRD is
// installed. The error explains a failed lookup other than "not found".
func PodAutoscalersServed(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == v1alpha1.Resource {
			return true, nil
		}
	}
	return false, nil
}
