package controller

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/schedule"
)

// EventInvalidSchedule is the warning for a spec.schedules entry tidal
// cannot parse (a bad cron expression or time zone); the entry is ignored.
const EventInvalidSchedule = "InvalidSchedule"

// ConditionSchedulesValid says whether every spec.schedules entry parsed;
// it is set only on autoscalers that have schedules.
const ConditionSchedulesValid autoscalingv2.HorizontalPodAutoscalerConditionType = "SchedulesValid"

// parseSchedules parses a PodAutoscaler's schedules; an entry that does not
// parse is left out and reported by its error, which names the entry.
func parseSchedules(in []v1alpha1.Schedule) ([]hpa.ScheduledMinimum, []error) {
	var out []hpa.ScheduledMinimum
	var errs []error
	for _, s := range in {
		w, err := schedule.Parse(s.Start, s.Duration.Duration, s.TimeZone)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %q: %w", s.Name, err))
			continue
		}
		var lead time.Duration
		if s.LeadTime != nil {
			lead = s.LeadTime.Duration
		}
		out = append(out, hpa.ScheduledMinimum{Name: s.Name, Window: w, Lead: lead, MinReplicas: s.MinReplicas})
	}
	return out, errs
}

// scheduleCondition reports the autoscaler's schedules: a warning event per
// entry that does not parse, and the SchedulesValid condition (removed
// when the autoscaler has no schedules).
func (s *syncRun) scheduleCondition() {
	a := s.a
	if len(a.Schedules) == 0 && len(a.ScheduleErrs) == 0 {
		s.status.Conditions = hpa.RemoveConditions(s.status.Conditions, ConditionSchedulesValid)
		return
	}
	if len(a.ScheduleErrs) == 0 {
		s.setConditions(hpa.Condition{Type: ConditionSchedulesValid, Status: corev1.ConditionTrue, Reason: "AllSchedulesValid",
			Message: fmt.Sprintf("%d schedules parsed", len(a.Schedules))})
		return
	}
	msgs := make([]string, len(a.ScheduleErrs))
	for i, err := range a.ScheduleErrs {
		msgs[i] = err.Error()
		s.event(corev1.EventTypeWarning, EventInvalidSchedule, err.Error()+"; the entry is ignored")
	}
	s.setConditions(hpa.Condition{Type: ConditionSchedulesValid, Status: corev1.ConditionFalse, Reason: EventInvalidSchedule,
		Message: strings.Join(msgs, "; ") + "; these entries are ignored, the others apply"})
}

// requeueAtScheduleChange syncs the autoscaler again when one of its
// windows opens or closes before the next periodic sync, so that a window
// takes effect on time.
func (c *Controller) requeueAtScheduleChange(a *Autoscaler, now time.Time) {
	next := hpa.NextScheduleChange(a.Schedules, now)
	if next.IsZero() {
		return
	}
	if wait := next.Sub(now); wait < c.cfg.SyncPeriod {
		c.queue.AddAfter(a.Key, max(wait, 0))
	}
}
