package controller

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/scale"
)

// ScaleClient reads and writes the /scale subresource of scale targets.
type ScaleClient interface {
	// Get reads the target's scale and tells which resource served it.
	Get(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error)
	// Update writes a scale read by Get.
	Update(ctx context.Context, namespace string, gr schema.GroupResource, s *autoscalingv1.Scale) (*autoscalingv1.Scale, error)
}

// Scales is the ScaleClient of a cluster: it maps the reference's kind to
// resources with mapper and speaks to any resource with a /scale
// subresource (Deployments, StatefulSets, ReplicaSets, custom resources).
type Scales struct {
	Mapper meta.RESTMapper
	Client scale.ScalesGetter
}

// Get tries each resource the kind maps to until one serves /scale; the
// first error is reported when none does.
func (s *Scales) Get(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	mappings, err := s.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
	}
	var first error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := s.Client.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, first
}

// Update writes the scale.
func (s *Scales) Update(ctx context.Context, namespace string, gr schema.GroupResource, sc *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	return s.Client.Scales(namespace).Update(ctx, gr, sc, metav1.UpdateOptions{})
}
