package controller

import (
	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
)

// The PodAutoscaler API keeps its own copies of the hpa package's History and
// Watermarks, so that the API types import no algorithm; these functions
// convert between the two at the controller, the one place that uses both.

// watermarksFromAPI converts index-aligned API watermarks (nil stays nil).
func watermarksFromAPI(in []*v1alpha1.Watermarks) []*hpa.Watermarks {
	if in == nil {
		return nil
	}
	out := make([]*hpa.Watermarks, len(in))
	for i, w := range in {
		if w != nil {
			hw := hpa.Watermarks(*w)
			out[i] = &hw
		}
	}
	return out
}

// historyFromAPI converts a stored history (nil is empty).
func historyFromAPI(in *v1alpha1.History) hpa.History {
	if in == nil {
		return hpa.History{}
	}
	out := hpa.History{
		ScaleUpEvents:   eventsFromAPI(in.ScaleUpEvents),
		ScaleDownEvents: eventsFromAPI(in.ScaleDownEvents),
	}
	for _, r := range in.Recommendations {
		out.Recommendations = append(out.Recommendations, hpa.Recommendation(r))
	}
	return out
}

// historyToAPI converts a history to its stored form; an empty one is nil
// (nothing to persist).
func historyToAPI(h hpa.History) *v1alpha1.History {
	if historyOrNil(h) == nil {
		return nil
	}
	out := &v1alpha1.History{
		ScaleUpEvents:   eventsToAPI(h.ScaleUpEvents),
		ScaleDownEvents: eventsToAPI(h.ScaleDownEvents),
	}
	for _, r := range h.Recommendations {
		out.Recommendations = append(out.Recommendations, v1alpha1.Recommendation(r))
	}
	return out
}

func eventsFromAPI(in []v1alpha1.ScaleEvent) []hpa.ScaleEvent {
	var out []hpa.ScaleEvent
	for _, e := range in {
		out = append(out, hpa.ScaleEvent(e))
	}
	return out
}

func eventsToAPI(in []hpa.ScaleEvent) []v1alpha1.ScaleEvent {
	var out []v1alpha1.ScaleEvent
	for _, e := range in {
		out = append(out, v1alpha1.ScaleEvent(e))
	}
	return out
}
