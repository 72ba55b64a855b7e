package hpa

import (
	"reflect"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/schedule"
)

// window parses a schedule window or fails the test.
func window(t *testing.T, name, start string, d time.Duration, zone string, lead time.Duration, minR int32) ScheduledMinimum {
	t.Helper()
	w, err := schedule.Parse(start, d, zone)
	if err != nil {
		t.Fatal(err)
	}
	return ScheduledMinimum{Name: name, Window: w, Lead: lead, MinReplicas: minR}
}

// berlin parses a wall-clock time in Europe/Berlin (the zone comes from a
// parsed window, so a missing zone database fails in window first).
func berlin(t *testing.T, clock string) time.Time {
	t.Helper()
	loc := window(t, "zone", "@daily", time.Hour, "Europe/Berlin", 0, 0).Window.Location()
	v, err := time.ParseInLocation("2006-01-02 15:04", clock, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScheduleFloor(t *testing.T) {
	const zone = "Europe/Berlin"
	office := window(t, "office", "0 8 * * 1-5", 12*time.Hour, zone, 0, 10)
	early := window(t, "early", "0 8 * * 1-5", 12*time.Hour, zone, 15*time.Minute, 10)
	lunch := window(t, "lunch", "0 12 * * *", 2*time.Hour, zone, 0, 20)
	same := window(t, "same", "0 9 * * *", 2*time.Hour, zone, 0, 10)
	morning := window(t, "morning", "0 8 * * *", time.Hour, zone, 0, 4)
	for _, tc := range []struct {
		name    string
		windows []ScheduledMinimum
		at      string
		want    Floor
	}{
		{name: "no windows", at: "2026-11-23 09:00"},
		{name: "before opening", windows: []ScheduledMinimum{office}, at: "2026-11-23 07:59"},
		{name: "opening minute", windows: []ScheduledMinimum{office}, at: "2026-11-23 08:00", want: Floor{10, []string{"office"}}},
		{name: "closing minute is closed", windows: []ScheduledMinimum{office}, at: "2026-11-23 20:00"},
		{name: "last minute", windows: []ScheduledMinimum{office}, at: "2026-11-23 19:59", want: Floor{10, []string{"office"}}},
		{name: "lead time", windows: []ScheduledMinimum{early}, at: "2026-11-23 07:45", want: Floor{10, []string{"early"}}},
		{name: "before the lead time", windows: []ScheduledMinimum{early}, at: "2026-11-23 07:44"},
		{name: "weekend", windows: []ScheduledMinimum{office}, at: "2026-11-28 09:00"},
		{name: "overlap: highest wins", windows: []ScheduledMinimum{office, lunch}, at: "2026-11-23 12:30", want: Floor{20, []string{"lunch"}}},
		{name: "overlap: equal minimums name both", windows: []ScheduledMinimum{office, same}, at: "2026-11-23 09:30", want: Floor{10, []string{"office", "same"}}},
		{name: "overlap ended", windows: []ScheduledMinimum{office, lunch}, at: "2026-11-23 14:00", want: Floor{10, []string{"office"}}},
		{name: "window already open (opened while nobody looked)", windows: []ScheduledMinimum{office}, at: "2026-11-23 16:00", want: Floor{10, []string{"office"}}},
		// Berlin changes to CEST on 2026-03-29 and back on 2026-10-25:
		// the window follows the local clock, not UTC.
		{name: "DST spring: 08:30 CEST (06:30 UTC) is open", windows: []ScheduledMinimum{morning}, at: "2026-03-30 08:30", want: Floor{4, []string{"morning"}}},
		{name: "DST spring: 09:30 CEST (07:30 UTC) is closed", windows: []ScheduledMinimum{morning}, at: "2026-03-30 09:30"},
		{name: "DST autumn: 08:30 CET (07:30 UTC) is open", windows: []ScheduledMinimum{morning}, at: "2026-10-26 08:30", want: Floor{4, []string{"morning"}}},
		{name: "DST autumn: 07:30 CET (06:30 UTC) is closed", windows: []ScheduledMinimum{morning}, at: "2026-10-26 07:30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ScheduleFloor(tc.windows, berlin(t, tc.at))
			if got.Replicas != tc.want.Replicas || !reflect.DeepEqual(got.Windows, tc.want.Windows) {
				t.Fatalf("floor at %s = %+v, want %+v", tc.at, got, tc.want)
			}
		})
	}
}

func TestNextScheduleChange(t *testing.T) {
	office := window(t, "office", "0 8 * * 1-5", 12*time.Hour, "Europe/Berlin", 10*time.Minute, 10)
	lunch := window(t, "lunch", "0 12 * * *", 2*time.Hour, "Europe/Berlin", 0, 20)
	ws := []ScheduledMinimum{office, lunch}
	for _, tc := range []struct{ at, want string }{
		{"2026-11-23 07:00", "2026-11-23 07:50"}, // the lead time before the office opens
		{"2026-11-23 09:00", "2026-11-23 12:00"}, // lunch opens
		{"2026-11-23 12:30", "2026-11-23 14:00"}, // lunch closes
		{"2026-11-23 15:00", "2026-11-23 20:00"}, // the office closes
	} {
		if got, want := NextScheduleChange(ws, berlin(t, tc.at)), berlin(t, tc.want); !got.Equal(want) {
			t.Errorf("next change after %s = %s, want %s", tc.at, got, want)
		}
	}
	if got := NextScheduleChange(nil, epoch()); !got.IsZero() {
		t.Errorf("no windows: next change %s, want none", got)
	}
}

func TestEffectiveMinReplicas(t *testing.T) {
	spec := func(minR *int32, maxR int32) autoscalingv2.HorizontalPodAutoscalerSpec {
		return autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: minR, MaxReplicas: maxR}
	}
	two, zero := int32(2), int32(0)
	for _, tc := range []struct {
		name  string
		spec  autoscalingv2.HorizontalPodAutoscalerSpec
		floor int32
		want  int32
	}{
		{"no window: spec", spec(&two, 10), 0, 2},
		{"no window, defaulted", spec(nil, 10), 0, 1},
		{"window below spec", spec(&two, 10), 1, 2},
		{"window raises", spec(&two, 10), 6, 6},
		{"capped by max", spec(&two, 10), 50, 10},
		{"raises from zero", spec(&zero, 10), 3, 3},
		{"zero stays zero", spec(&zero, 10), 0, 0},
	} {
		if got := EffectiveMinReplicas(tc.spec, Floor{Replicas: tc.floor, Windows: []string{"w"}}); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestScheduleRaisesMinimumWhereTheHPAClamps(t *testing.T) {
	cfg := DefaultConfig()
	floor := Floor{Replicas: 6, Windows: []string{"office"}}
	t.Run("below the raised minimum: clamped without metrics", func(t *testing.T) {
		in := reconcileAt(epoch(), 2, 1, 10, 2, nil, History{})
		in.Floor = floor
		d := Reconcile(cfg, in)
		if !d.Rescale || d.DesiredReplicas != 6 || !strings.HasPrefix(d.Reason, reasonBelowMin) || !strings.Contains(d.Reason, "schedule office") {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("metrics propose less: TooFewReplicas names the schedule", func(t *testing.T) {
		in := reconcileAt(epoch(), 6, 1, 10, 2, nil, History{Recommendations: recs(6, time.Hour)})
		in.Floor = floor
		d := Reconcile(cfg, in)
		c, _ := d.condition(autoscalingv2.ScalingLimited)
		if d.Rescale || d.DesiredReplicas != 6 || c.Reason != ReasonTooFewReplicas || c.Status != v1.ConditionTrue ||
			!strings.HasPrefix(c.Message, msgTooFewReplicas) || !strings.Contains(c.Message, "raised to 6 by schedule office") {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("metrics propose more: the metrics win", func(t *testing.T) {
		in := reconcileAt(epoch(), 6, 1, 10, 8, nil, History{})
		in.Floor = floor
		if d := Reconcile(cfg, in); d.DesiredReplicas != 8 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("with behavior", func(t *testing.T) {
		in := reconcileAt(epoch(), 6, 1, 10, 2, &autoscalingv2.HorizontalPodAutoscalerBehavior{}, History{Recommendations: recs(6, time.Hour)})
		in.Floor = floor
		d := Reconcile(cfg, in)
		if c, _ := d.condition(autoscalingv2.ScalingLimited); d.DesiredReplicas != 6 || c.Reason != ReasonTooFewReplicas || !strings.Contains(c.Message, "office") {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("no floor: the message is upstream's", func(t *testing.T) {
		d := Reconcile(cfg, reconcileAt(epoch(), 3, 3, 10, 1, nil, History{Recommendations: recs(3, time.Hour)}))
		if c, _ := d.condition(autoscalingv2.ScalingLimited); c.Message != msgTooFewReplicas {
			t.Fatalf("got %+v", c)
		}
	})
}
