package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names of the API.
const (
	GroupName = "autoscaling.tidal.dev"
	Version   = "v1alpha1"
	Kind      = "PodAutoscaler"
	Resource  = "podautoscalers"
)

var (
	// SchemeGroupVersion is the group and version of the API.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GroupVersionResource names the podautoscalers resource.
	GroupVersionResource = SchemeGroupVersion.WithResource(Resource)
	// GroupVersionKind names the PodAutoscaler kind.
	GroupVersionKind = SchemeGroupVersion.WithKind(Kind)

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers the API's types in a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PodAutoscaler{}, &PodAutoscalerList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
