package schedule

import (
	"strings"
	"testing"
	"time"
)

func at(t *testing.T, zone, clock string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", clock, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWindowActive(t *testing.T) {
	const berlin, newYork = "Europe/Berlin", "America/New_York"
	for _, tc := range []struct {
		name, start, zone string
		duration, lead    time.Duration
		at                string // in zone
		atZone            string // zone of at, when not zone
		want              bool
	}{
		{name: "weekday morning inside", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, at: "2026-11-23 09:00", want: true},
		{name: "opening minute", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, at: "2026-11-23 08:00", want: true},
		{name: "a minute before opening", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, at: "2026-11-23 07:59"},
		{name: "within the lead time", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, lead: 10 * time.Minute,
			at: "2026-11-23 07:51", want: true},
		{name: "before the lead time", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, lead: 10 * time.Minute,
			at: "2026-11-23 07:49"},
		{name: "last minute open", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, at: "2026-11-23 19:59", want: true},
		{name: "closing minute is closed", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, at: "2026-11-23 20:00"},
		{name: "saturday", start: "0 8 * * 1-5", zone: berlin, duration: 12 * time.Hour, at: "2026-11-28 09:00"},
		{name: "friday night window runs into saturday", start: "0 22 * * 5", zone: berlin, duration: 4 * time.Hour,
			at: "2026-11-28 01:30", want: true},
		{name: "time zone of the window, not of the clock: 08:30 Berlin is 07:30 UTC", start: "0 8 * * 1-5", zone: berlin,
			duration: time.Hour, at: "2026-11-23 07:30", atZone: "UTC", want: true},
		{name: "UTC 08:30 is 09:30 in Berlin, after a one-hour window", start: "0 8 * * 1-5", zone: berlin,
			duration: time.Hour, at: "2026-11-23 08:30", atZone: "UTC"},
		// Berlin goes from CET to CEST on 2026-03-29 (02:00 -> 03:00) and
		// back on 2026-10-25 (03:00 -> 02:00): a window at 08:00 local
		// opens at 07:00 UTC before and 06:00 UTC after the spring change.
		{name: "spring: friday before, 08:00 CET is 07:00 UTC", start: "0 8 * * *", zone: berlin, duration: time.Hour,
			at: "2026-03-27 07:00", atZone: "UTC", want: true},
		{name: "spring: monday after, 08:00 CEST is 06:00 UTC", start: "0 8 * * *", zone: berlin, duration: time.Hour,
			at: "2026-03-30 06:00", atZone: "UTC", want: true},
		{name: "spring: monday after, 07:00 UTC is 09:00 CEST, closed", start: "0 8 * * *", zone: berlin, duration: time.Hour,
			at: "2026-03-30 07:00", atZone: "UTC"},
		{name: "autumn: monday after, 08:00 CET is 07:00 UTC", start: "0 8 * * *", zone: berlin, duration: time.Hour,
			at: "2026-10-26 07:00", atZone: "UTC", want: true},
		{name: "autumn: monday after, 06:30 UTC is 07:30 CET, closed", start: "0 8 * * *", zone: berlin, duration: time.Hour,
			at: "2026-10-26 06:30", atZone: "UTC"},
		{name: "a 12 h window over the autumn night lasts 12 real hours", start: "0 22 * * *", zone: berlin, duration: 12 * time.Hour,
			at: "2026-10-25 08:59", want: true},
		{name: "and closes 12 real hours after it opened (09:00 CET)", start: "0 22 * * *", zone: berlin, duration: 12 * time.Hour,
			at: "2026-10-25 09:00"},
		{name: "New York changes on 2026-03-08: 08:00 EDT is 12:00 UTC", start: "0 8 * * *", zone: newYork, duration: time.Hour,
			at: "2026-03-09 12:00", atZone: "UTC", want: true},
		{name: "New York before the change: 08:00 EST is 13:00 UTC", start: "0 8 * * *", zone: newYork, duration: time.Hour,
			at: "2026-03-06 12:30", atZone: "UTC"},
		{name: "overlapping openings of one window: always open", start: "0 * * * *", zone: "UTC", duration: 90 * time.Minute,
			at: "2026-11-23 10:59", want: true},
		{name: "impossible date never opens", start: "0 8 30 2 *", zone: "UTC", duration: time.Hour, at: "2027-02-28 08:30"},
		{name: "descriptor", start: "@daily", zone: "UTC", duration: time.Hour, at: "2026-11-23 00:30", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Parse(tc.start, tc.duration, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			zone := tc.zone
			if tc.atZone != "" {
				zone = tc.atZone
			}
			now := at(t, zone, tc.at)
			if got := w.Active(now, tc.lead); got != tc.want {
				t.Fatalf("%s for %s in %s, lead %s: active at %s (%s UTC) = %v, want %v", tc.start, tc.duration, tc.zone, tc.lead,
					tc.at, now.UTC().Format("2006-01-02 15:04"), got, tc.want)
			}
		})
	}
}

// Active is a function of the time alone: a window that opened while
// tidal was down is open at the first look after a restart.
func TestWindowOpenedWhileDownAppliesAtStart(t *testing.T) {
	w, err := Parse("0 8 * * 1-5", 12*time.Hour, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Active(at(t, "Europe/Berlin", "2026-11-23 15:17"), 0) {
		t.Fatal("a window open since 08:00 is not active at 15:17")
	}
}

// NextChange is never later than the next change of Active: stepping
// from one change to the next finds every edge a minute-by-minute walk
// finds, across the autumn change.
func TestNextChangeMissesNoEdge(t *testing.T) {
	w, err := Parse("30 1 * * *", 3*time.Hour, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	lead := 20 * time.Minute
	from := at(t, "Europe/Berlin", "2026-10-23 00:00")
	to := from.Add(4 * 24 * time.Hour)
	var edges []time.Time
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		if w.Active(m, lead) != w.Active(m.Add(-time.Minute), lead) {
			edges = append(edges, m)
		}
	}
	if len(edges) < 6 {
		t.Fatalf("%d edges in four days, want at least 6", len(edges))
	}
	cur := from
	for _, e := range edges {
		next := w.NextChange(cur, lead)
		for next.Before(e) {
			if next.IsZero() || !next.After(cur) {
				t.Fatalf("NextChange(%s) = %s: no progress before the edge at %s", cur, next, e)
			}
			cur = next
			next = w.NextChange(cur, lead)
		}
		if next.After(e) {
			t.Fatalf("NextChange(%s) = %s, after the edge at %s", cur, next, e)
		}
		cur = e
	}
}

func TestParseErrorsNameWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		start, zone string
		duration    time.Duration
		want        string
	}{
		{"", "UTC", time.Hour, "start: empty"},
		{"0 8 * *", "UTC", time.Hour, `start "0 8 * *"`},
		{"0 25 * * *", "UTC", time.Hour, `start "0 25 * * *"`},
		{"0 8 * * *", "Mars/Olympus", time.Hour, `timeZone "Mars/Olympus"`},
		{"0 8 * * *", "UTC", 0, "duration 0s"},
		{"CRON_TZ=UTC 0 8 * * *", "UTC", time.Hour, "timeZone, not in the expression"},
		{"@every 1h", "UTC", time.Hour, "@every"},
	} {
		if _, err := Parse(tc.start, tc.duration, tc.zone); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %s, %q) = %v, want an error with %q", tc.start, tc.duration, tc.zone, err, tc.want)
		}
	}
}
