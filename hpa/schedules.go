package hpa

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/tidal-autoscaler/tidal/schedule"
)

// ScheduledMinimum is one time window that raises an autoscaler's lower
// limit (a PodAutoscaler's spec.schedules entry, parsed).
type ScheduledMinimum struct {
	// Name identifies the window in messages.
	Name string
	// Window is when it applies.
	Window schedule.Window
	// Lead raises the minimum this long before each opening.
	Lead time.Duration
	// MinReplicas is the lower limit while the window is open.
	MinReplicas int32
}

// Floor is the lower limit the open windows set at one instant.
type Floor struct {
	// Replicas is the highest minReplicas of the open windows (0: none).
	Replicas int32
	// Windows names the open windows that set Replicas, in spec order.
	Windows []string
}

// ScheduleFloor returns the floor the windows set at now: the highest
// minReplicas among those open (or within their lead time of opening).
// Stateless: a window that opened while nobody looked applies all the same.
func ScheduleFloor(windows []ScheduledMinimum, now time.Time) Floor {
	var f Floor
	for _, w := range windows {
		if !w.Window.Active(now, w.Lead) {
			continue
		}
		switch {
		case w.MinReplicas > f.Replicas:
			f = Floor{Replicas: w.MinReplicas, Windows: []string{w.Name}}
		case w.MinReplicas == f.Replicas && w.MinReplicas > 0:
			f.Windows = append(f.Windows, w.Name)
		}
	}
	return f
}

// NextScheduleChange is the earliest time after now at which a window may
// open or close (zero when none ever will): when to evaluate again so that
// a window takes effect on time.
func NextScheduleChange(windows []ScheduledMinimum, now time.Time) time.Time {
	var next time.Time
	for _, w := range windows {
		t := w.Window.NextChange(now, w.Lead)
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// EffectiveMinReplicas is the lower limit the calculation applies:
// spec.minReplicas (defaulted to 1), raised to the floor capped by
// spec.maxReplicas.
func EffectiveMinReplicas(spec autoscalingv2.HorizontalPodAutoscalerSpec, f Floor) int32 {
	return max(specMinReplicas(spec), min(f.Replicas, spec.MaxReplicas))
}

// raisedBy says which schedule raised the minimum, for messages; "" when
// spec.minReplicas is the minimum.
func raisedBy(spec autoscalingv2.HorizontalPodAutoscalerSpec, f Floor) string {
	if f.Replicas <= specMinReplicas(spec) || len(f.Windows) == 0 {
		return ""
	}
	noun := "schedule"
	if len(f.Windows) > 1 {
		noun = "schedules"
	}
	return fmt.Sprintf(" (minReplicas raised to %d by %s %s)", EffectiveMinReplicas(spec, f), noun,
		strings.Join(slices.Clone(f.Windows), ", "))
}
