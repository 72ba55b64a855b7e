// Package schedule holds recurring time windows named in cron form: when a
// scheduled minimum of a node group or a workload applies. It is pure: the
// time is always an argument.
package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Window is a recurring time window: it opens at each time its cron
// expression names, in its time zone, and stays open for its duration.
type Window struct {
	start    cron.Schedule
	duration time.Duration
	loc      *time.Location
}

// parser reads the five standard fields (minute hour day-of-month month
// day-of-week) and the descriptors @yearly, @monthly, @weekly, @daily and
// @hourly.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads a window: start is a five-field cron expression (as a
// CronJob's schedule), duration how long each opening lasts, timeZone an
// IANA time zone name ("" is UTC). The error names what is wrong.
func Parse(start string, duration time.Duration, timeZone string) (Window, error) {
	spec := strings.TrimSpace(start)
	switch {
	case spec == "":
		return Window{}, fmt.Errorf("start: empty cron expression")
	case strings.Contains(spec, "TZ="):
		return Window{}, fmt.Errorf("start %q: give the time zone in timeZone, not in the expression", start)
	case strings.HasPrefix(spec, "@every"):
		return Window{}, fmt.Errorf("start %q: @every is not a time of day; use a cron expression", start)
	case duration <= 0:
		return Window{}, fmt.Errorf("duration %s: must be positive", duration)
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		return Window{}, fmt.Errorf("timeZone %q: %w", timeZone, err)
	}
	sched, err := parser.Parse("CRON_TZ=" + loc.String() + " " + spec)
	if err != nil {
		return Window{}, fmt.Errorf("start %q: %w", start, err)
	}
	return Window{start: sched, duration: duration, loc: loc}, nil
}

// Active tells whether the window is open at t, or opens within lead
// after t (a minimum is raised ahead of its window).
func (w Window) Active(t time.Time, lead time.Duration) bool {
	s := w.nextOpening(t)
	return !s.IsZero() && !s.After(t.Add(lead))
}

// nextOpening is the first opening whose window is still open after t (or
// not yet open): the first start after t - duration. Zero when the
// expression names no time (such as February 30).
func (w Window) nextOpening(t time.Time) time.Time {
	if w.start == nil {
		return time.Time{}
	}
	return w.start.Next(t.Add(-w.duration))
}

// NextChange is a time not later than the next time Active(·, lead) may
// change after t: when the current opening closes, or lead before the
// next one. Zero when the window never opens again.
func (w Window) NextChange(t time.Time, lead time.Duration) time.Time {
	s := w.nextOpening(t)
	switch {
	case s.IsZero():
		return time.Time{}
	case s.After(t.Add(lead)):
		return s.Add(-lead)
	}
	return s.Add(w.duration)
}

// Location is the window's time zone.
func (w Window) Location() *time.Location { return w.loc }
