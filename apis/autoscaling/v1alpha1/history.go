package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Recommendation is one stored, unstabilized replica recommendation.
type Recommendation struct {
	Replicas  int32       `json:"replicas"`
	Timestamp metav1.Time `json:"timestamp"`
}

// ScaleEvent is one stored rescale: the absolute replica change and when it
// happened. Outdated marks an entry older than the longest policy period of
// its direction at the time of the last store; such an entry may be reused.
type ScaleEvent struct {
	ReplicaChange int32       `json:"replicaChange"`
	Timestamp     metav1.Time `json:"timestamp"`
	Outdated      bool        `json:"outdated,omitempty"`
}

// History is the stored form of the hpa package's History: the memory the
// stabilization windows and scaling policies look back on. The controller
// converts between the two.
type History struct {
	// Recommendations are the recent unstabilized recommendations.
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	// ScaleUpEvents and ScaleDownEvents are the recent rescales, recorded
	// only for autoscalers with a behavior.
	ScaleUpEvents   []ScaleEvent `json:"scaleUpEvents,omitempty"`
	ScaleDownEvents []ScaleEvent `json:"scaleDownEvents,omitempty"`
}
