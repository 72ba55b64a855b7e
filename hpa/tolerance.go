package hpa

import autoscalingv2 "k8s.io/api/autoscaling/v2"

// Tolerances is the pair of usage-ratio tolerances, one per direction. A ratio
// r of current to target usage causes no change when 1-Down <= r <= 1+Up.
type Tolerances struct {
	Up   float64 `json:"up"`
	Down float64 `json:"down"`
}

// UniformTolerances returns the same tolerance for both directions.
func UniformTolerances(t float64) Tolerances {
	return Tolerances{Up: t, Down: t}
}

// Within reports whether ratio lies inside the tolerance band (inclusive).
func (t Tolerances) Within(ratio float64) bool {
	return (1.0-t.Down) <= ratio && ratio <= (1.0+t.Up)
}

// TolerancesFor returns the tolerances an autoscaler runs with: the flag value
// in both directions, replaced per direction by behavior.scaleUp.tolerance and
// behavior.scaleDown.tolerance when set (the HPAConfigurableTolerance feature,
// on by default in Kubernetes v1.36).
func TolerancesFor(flag float64, b *autoscalingv2.HorizontalPodAutoscalerBehavior) Tolerances {
	t := UniformTolerances(flag)
	if b == nil {
		return t
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.Down = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.Up = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	return t
}
