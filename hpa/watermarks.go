package hpa

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultWatermarkTolerancePercent widens each watermark when its tolerance
// is unset.
const DefaultWatermarkTolerancePercent int32 = 1

// Watermarks is tidal's dual-watermark spec for one metric. It replaces the
// metric's single-target proposal with a hysteresis band:
//
//   - above High (widened by HighTolerancePercent) the proposal is
//     ceil(current * value / High);
//   - below Low (narrowed by LowTolerancePercent) it is
//     floor(current * value / Low);
//   - in between it is current (no change).
//
// value is the metric's current value as status reports it, in the unit of
// its target: the average utilization in whole percent for Utilization
// targets (so High "90" means 90%), else the average value or the value.
// current is scale.spec.replicas.
//
// MaxScaleUpPercent and MaxScaleDownPercent optionally limit one step:
// up to min(current + max(1, floor(current*up%)), maxReplicas) and down to
// max(current - max(1, floor(current*down%)), minReplicas).
//
// The result then goes through the usual combination and normalization
// (stabilization, behavior policies, min/max).
type Watermarks struct {
	// High is the scale-up watermark.
	High *resource.Quantity `json:"high,omitempty"`
	// Low is the scale-down watermark; it must not exceed High.
	Low *resource.Quantity `json:"low,omitempty"`
	// HighTolerancePercent widens High: scale up only above High*(1+t/100).
	// Defaults to 1.
	HighTolerancePercent *int32 `json:"highTolerancePercent,omitempty"`
	// LowTolerancePercent widens Low: scale down only below Low*(1-t/100).
	// Defaults to 1.
	LowTolerancePercent *int32 `json:"lowTolerancePercent,omitempty"`
	// MaxScaleUpPercent limits one scale-up step (at least one pod).
	MaxScaleUpPercent *int32 `json:"maxScaleUpPercent,omitempty"`
	// MaxScaleDownPercent limits one scale-down step (at least one pod).
	MaxScaleDownPercent *int32 `json:"maxScaleDownPercent,omitempty"`
}

// DeepCopyInto copies w into out.
func (w *Watermarks) DeepCopyInto(out *Watermarks) {
	*out = Watermarks{}
	if w.High != nil {
		q := w.High.DeepCopy()
		out.High = &q
	}
	if w.Low != nil {
		q := w.Low.DeepCopy()
		out.Low = &q
	}
	out.HighTolerancePercent = copyInt32(w.HighTolerancePercent)
	out.LowTolerancePercent = copyInt32(w.LowTolerancePercent)
	out.MaxScaleUpPercent = copyInt32(w.MaxScaleUpPercent)
	out.MaxScaleDownPercent = copyInt32(w.MaxScaleDownPercent)
}

// DeepCopy returns a copy of w.
func (w *Watermarks) DeepCopy() *Watermarks {
	if w == nil {
		return nil
	}
	out := new(Watermarks)
	w.DeepCopyInto(out)
	return out
}

// copyInt32 copies an optional int32.
func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Validate checks the spec: at least one watermark, both positive, Low not
// above High, tolerances and the scale-down step within [0, 100] percent and
// the scale-up step not negative.
func (w *Watermarks) Validate() error {
	if w.High == nil && w.Low == nil {
		return constError("watermarks: neither high nor low is set")
	}
	if w.High != nil && w.High.Sign() <= 0 {
		return fmt.Errorf("watermarks: high %s must be positive", w.High)
	}
	if w.Low != nil && w.Low.Sign() <= 0 {
		return fmt.Errorf("watermarks: low %s must be positive", w.Low)
	}
	if w.High != nil && w.Low != nil && w.Low.Cmp(*w.High) > 0 {
		return fmt.Errorf("watermarks: low %s is above high %s", w.Low, w.High)
	}
	for _, f := range []struct {
		name   string
		p      *int32
		lo, hi int32
	}{
		{"highTolerancePercent", w.HighTolerancePercent, 0, 100},
		{"lowTolerancePercent", w.LowTolerancePercent, 0, 100},
		{"maxScaleUpPercent", w.MaxScaleUpPercent, 0, math.MaxInt32},
		{"maxScaleDownPercent", w.MaxScaleDownPercent, 0, 100},
	} {
		if f.p != nil && (*f.p < f.lo || *f.p > f.hi) {
			return fmt.Errorf("watermarks: %s %d is outside [%d, %d]", f.name, *f.p, f.lo, f.hi)
		}
	}
	return nil
}

// WatermarkReplicas returns the watermark proposal for a metric whose current
// value is value (milli-units of the target's unit), with current replicas.
func WatermarkReplicas(current int32, value int64, w *Watermarks, minReplicas, maxReplicas int32) (int32, error) {
	if err := w.Validate(); err != nil {
		return 0, err
	}
	if w.High != nil {
		high, tol := w.High.MilliValue(), orDefault(w.HighTolerancePercent)
		if cmpProducts(value, 100, high, int64(100+tol)) > 0 {
			p := clampReplicas(mulDivCeil(int64(current), value, high))
			if w.MaxScaleUpPercent != nil {
				p = min(p, ScaleUpStep(current, *w.MaxScaleUpPercent, maxReplicas))
			}
			return p, nil
		}
	}
	if w.Low != nil {
		low, tol := w.Low.MilliValue(), orDefault(w.LowTolerancePercent)
		if cmpProducts(value, 100, low, int64(100-tol)) < 0 {
			p := clampReplicas(mulDivFloor(int64(current), value, low))
			if w.MaxScaleDownPercent != nil {
				p = max(p, ScaleDownStep(current, *w.MaxScaleDownPercent, minReplicas))
			}
			return p, nil
		}
	}
	return current, nil
}

// orDefault returns the tolerance percent, or the default when unset.
func orDefault(p *int32) int32 {
	if p == nil {
		return DefaultWatermarkTolerancePercent
	}
	return *p
}

// ScaleUpStep is the largest count one rate-limited scale-up step reaches:
// min(current + max(1, floor(current*percent/100)), maxReplicas).
func ScaleUpStep(current, percent, maxReplicas int32) int32 {
	step := max(1, int64(current)*int64(percent)/100)
	return clampReplicas(min(int64(current)+step, int64(maxReplicas)))
}

// ScaleDownStep is the smallest count one rate-limited scale-down step
// reaches: max(current - max(1, floor(current*percent/100)), minReplicas).
func ScaleDownStep(current, percent, minReplicas int32) int32 {
	step := max(1, int64(current)*int64(percent)/100)
	return clampReplicas(max(int64(current)-step, int64(minReplicas)))
}

// watermarkValue is the value a metric result is compared with: whole-percent
// utilization for Utilization targets, else the reported value.
func watermarkValue(r MetricResult) int64 {
	if r.Utilization {
		return int64(r.Proposal.Utilization) * 1000
	}
	return r.Proposal.Value
}

// applyWatermarks replaces a metric result's proposal with its watermark
// proposal; an invalid spec makes the metric fail.
func applyWatermarks(r MetricResult, w *Watermarks, current, minReplicas, maxReplicas int32) MetricResult {
	p, err := WatermarkReplicas(current, watermarkValue(r), w, minReplicas, maxReplicas)
	if err != nil {
		return failed(failureReason(r.Status.Type), fmt.Errorf("metric %s: %w", r.Name, err))
	}
	r.Replicas = p
	return r
}
