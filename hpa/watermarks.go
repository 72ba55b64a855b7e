package hpa

import (
	"fmt"
	"math"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// Bounds of the watermarks, the PodAutoscaler CRD's (see Validate).
const (
	// maxWatermark is the largest watermark, 1P: the HPA, and tidal after
	// it, computes in thousandths of the metric's unit in 64-bit integers.
	maxWatermark = 1_000_000_000_000_000
	// maxScaleUpPercent caps one scale-up step at 11 times the count.
	maxScaleUpPercent = 1000
)

// Validate checks w against the bounds the PodAutoscaler CRD sets, with
// the messages the API server gives, each error at path's child field: one
// watermark set at least, both above 0 and at most 1P, low not above high,
// the tolerances and the scale-down step within [0, 100] percent, the
// scale-up step within [0, 1000]. The strings of the quantities are checked
// where they are parsed (see v1alpha1.UnmarshalChecked).
func (w *Watermarks) Validate(path *field.Path) field.ErrorList { return w.check(path, true) }

// check is Validate; without bounded, it leaves out the upper bounds of
// the watermarks and of the scale-up step, which WatermarkReplicas does not
// need: its arithmetic stays exact above them.
func (w *Watermarks) check(path *field.Path, bounded bool) field.ErrorList {
	var errs field.ErrorList
	if w.High == nil && w.Low == nil {
		errs = append(errs, field.Required(path, "set high, low or both"))
	}
	for _, m := range []struct {
		name string
		q    *resource.Quantity
	}{{"high", w.High}, {"low", w.Low}} {
		switch {
		case m.q == nil:
		case m.q.Sign() <= 0:
			errs = append(errs, field.Invalid(path.Child(m.name), m.q.String(), "must be greater than 0"))
		case bounded && m.q.CmpInt64(maxWatermark) > 0:
			errs = append(errs, field.Invalid(path.Child(m.name), m.q.String(),
				"must be at most 1P (10^15): tidal, like the HPA, computes in thousandths of the unit in 64-bit integers"))
		}
	}
	if w.High != nil && w.Low != nil && w.Low.Cmp(*w.High) > 0 {
		errs = append(errs, field.Invalid(path.Child("low"), w.Low.String(), "must not be above high"))
	}
	maxUp := int32(math.MaxInt32)
	if bounded {
		maxUp = maxScaleUpPercent
	}
	errs = append(errs, percentErrors(path, "highTolerancePercent", w.HighTolerancePercent, 100)...)
	errs = append(errs, percentErrors(path, "lowTolerancePercent", w.LowTolerancePercent, 100)...)
	errs = append(errs, percentErrors(path, "maxScaleDownPercent", w.MaxScaleDownPercent, 100)...)
	return append(errs, percentErrors(path, "maxScaleUpPercent", w.MaxScaleUpPercent, maxUp)...)
}

// percentErrors checks an optional percentage against [0, hi], with the
// API server's messages for a schema's minimum and maximum.
func percentErrors(path *field.Path, name string, p *int32, hi int32) field.ErrorList {
	switch {
	case p == nil:
		return nil
	case *p < 0:
		return field.ErrorList{field.Invalid(path.Child(name), *p, "should be greater than or equal to 0")}
	case *p > hi:
		return field.ErrorList{field.Invalid(path.Child(name), *p, fmt.Sprintf("should be less than or equal to %d", hi))}
	}
	return nil
}

// WatermarkReplicas returns the watermark proposal for a metric whose current
// value is value (milli-units of the target's unit), with current replicas.
// The arithmetic is exact for every quantity and value (see quantityNanos).
func WatermarkReplicas(current int32, value int64, w *Watermarks, minReplicas, maxReplicas int32) (int32, error) {
	if errs := w.check(field.NewPath("watermarks"), false); len(errs) > 0 {
		return 0, errs.ToAggregate()
	}
	v := milliNanos(value)
	cur := big.NewInt(int64(current))
	if w.High != nil {
		high, tol := quantityNanos(*w.High), int64(orDefault(w.HighTolerancePercent))
		if product(v, big.NewInt(100)).Cmp(product(high, big.NewInt(100+tol))) > 0 {
			p := clampBigReplicas(ceilDiv(product(cur, v), high))
			if w.MaxScaleUpPercent != nil {
				p = min(p, ScaleUpStep(current, *w.MaxScaleUpPercent, maxReplicas))
			}
			return p, nil
		}
	}
	if w.Low != nil {
		low, tol := quantityNanos(*w.Low), int64(orDefault(w.LowTolerancePercent))
		if product(v, big.NewInt(100)).Cmp(product(low, big.NewInt(100-tol))) < 0 {
			p := clampBigReplicas(floorDiv(product(cur, v), low))
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
