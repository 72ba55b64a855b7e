package nodeschedule

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// berlin is a wall-clock time in Berlin ("2006-01-02 15:04").
func berlin(t *testing.T, wall string) time.Time {
	t.Helper()
	return inZone(t, "Europe/Berlin", wall)
}

func inZone(t *testing.T, zone, wall string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err == nil {
		var v time.Time
		if v, err = time.ParseInLocation(time.DateTime, wall+":00", loc); err == nil {
			return v
		}
	}
	t.Fatalf("%s in %s: %v", wall, zone, err)
	return time.Time{}
}

func known(ids ...string) func(string) bool {
	return func(id string) bool { return slices.Contains(ids, id) }
}

const officeHours = `
- name: office-hours
  nodeGroup: general-a
  start: "0 8 * * 1-5"
  duration: 12h
  timeZone: Europe/Berlin
  minSize: 10
  maxSize: 20
- name: batch-night
  nodeGroup: general-a
  start: "0 19 * * *"
  duration: 3h
  timeZone: Europe/Berlin
  minSize: 14
  maxSize: 16
`

func TestScheduledBounds(t *testing.T) {
	c := Parse(map[string]string{SchedulesKey: officeHours, LeadTimeKey: "10m"}, known("general-a"))
	if len(c.Problems) > 0 || len(c.Entries) != 2 {
		t.Fatalf("parse: entries %d, problems %v", len(c.Entries), c.Problems)
	}
	for _, tc := range []struct {
		name, at  string
		want      *Bounds
		wantNext  string
		nextClock string
	}{
		{name: "before the lead time", at: "2026-11-23 07:49", nextClock: "2026-11-23 07:50"},
		{name: "within the lead time: raised ahead", at: "2026-11-23 07:50",
			want: &Bounds{Min: 10, Max: 20, HasMax: true, Entries: []string{"office-hours"}}, nextClock: "2026-11-23 18:50"},
		{name: "overlap: highest min, lowest max", at: "2026-11-23 19:30",
			want: &Bounds{Min: 14, Max: 16, HasMax: true, Entries: []string{"office-hours", "batch-night"}}, nextClock: "2026-11-23 20:00"},
		{name: "office closed, batch open", at: "2026-11-23 20:00",
			want: &Bounds{Min: 14, Max: 16, HasMax: true, Entries: []string{"batch-night"}}, nextClock: "2026-11-23 22:00"},
		{name: "all closed", at: "2026-11-23 22:00", nextClock: "2026-11-24 07:50"},
		{name: "saturday: only the nightly window", at: "2026-11-28 09:00", nextClock: "2026-11-28 18:50"},
		// Berlin changes from CEST to CET on 2026-10-25 at 03:00: the
		// windows still open at 08:00 local time, one hour later in UTC.
		{name: "DST change day: opens at 08:00 CET", at: "2026-10-26 07:55",
			want: &Bounds{Min: 10, Max: 20, HasMax: true, Entries: []string{"office-hours"}}, nextClock: "2026-10-26 18:50"},
		{name: "DST change day: not at 08:00 CEST", at: "2026-10-26 06:55", nextClock: "2026-10-26 07:50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := berlin(t, tc.at)
			got, next := c.At(now)
			b, ok := got["general-a"]
			switch {
			case tc.want == nil && ok:
				t.Errorf("bounds %+v, want none", b)
			case tc.want != nil && (!ok || b.Min != tc.want.Min || b.Max != tc.want.Max || b.HasMax != tc.want.HasMax ||
				!slices.Equal(b.Entries, tc.want.Entries)):
				t.Errorf("bounds %+v (set %v), want %+v", b, ok, *tc.want)
			}
			if want := berlin(t, tc.nextClock); !next.Equal(want) {
				t.Errorf("next change %s, want %s", next.In(now.Location()), want)
			}
		})
	}
}

func TestAlreadyOpenWindowAppliesAtOnce(t *testing.T) {
	// tidal starts at 13:00, five hours into the window: stateless, the
	// minimum applies at the first decision.
	c := Parse(map[string]string{SchedulesKey: officeHours}, known("general-a"))
	now := berlin(t, "2026-11-25 13:00")
	bounds, _ := c.At(now)
	groups := []Group{{ID: "general-a", Target: 2, Min: 1, Max: 30}, {ID: "other", Target: 0, Min: 1, Max: 5}}
	for i := range groups {
		groups[i].Min, groups[i].Max = Effective(groups[i].Min, groups[i].Max, bounds[groups[i].ID])
	}
	got := Raises(groups, bounds, false)
	want := []Raise{{Group: "general-a", From: 2, To: 10, Entries: []string{"office-hours"}}}
	if len(got) != 1 || got[0].Group != want[0].Group || got[0].From != 2 || got[0].To != 10 ||
		!slices.Equal(got[0].Entries, want[0].Entries) {
		t.Errorf("raises %+v, want %+v (a group without entries is left alone)", got, want)
	}
	// --enforce-node-group-min-size raises the other group to its cloud
	// minimum too, naming no entry; a group unavailable is not raised.
	got = Raises(groups, bounds, true)
	if len(got) != 2 || got[1].Group != "other" || got[1].From != 0 || got[1].To != 1 || len(got[1].Entries) != 0 {
		t.Errorf("raises with the cloud minimum enforced %+v, want general-a 2->10 and other 0->1", got)
	}
	groups[1].Unavailable = true
	if got = Raises(groups, bounds, true); len(got) != 1 {
		t.Errorf("raises %+v: an unavailable group was raised", got)
	}
}

func TestEffective(t *testing.T) {
	for _, tc := range []struct {
		name               string
		cloudMin, cloudMax int
		b                  Bounds
		wantMin, wantMax   int
	}{
		{name: "no entry", cloudMin: 1, cloudMax: 10, wantMin: 1, wantMax: 10},
		{name: "raised min", cloudMin: 1, cloudMax: 10, b: Bounds{Min: 4}, wantMin: 4, wantMax: 10},
		{name: "cloud min higher", cloudMin: 5, cloudMax: 10, b: Bounds{Min: 4}, wantMin: 5, wantMax: 10},
		{name: "min capped by the cloud max", cloudMin: 1, cloudMax: 10, b: Bounds{Min: 40}, wantMin: 10, wantMax: 10},
		{name: "lower max", cloudMin: 1, cloudMax: 10, b: Bounds{Min: 2, Max: 6, HasMax: true}, wantMin: 2, wantMax: 6},
		{name: "max never above the cloud's", cloudMin: 1, cloudMax: 10, b: Bounds{Max: 16, HasMax: true}, wantMin: 1, wantMax: 10},
		{name: "max never below the cloud min", cloudMin: 3, cloudMax: 10, b: Bounds{Max: 2, HasMax: true}, wantMin: 3, wantMax: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotMin, gotMax := Effective(tc.cloudMin, tc.cloudMax, tc.b)
			if gotMin != tc.wantMin || gotMax != tc.wantMax {
				t.Errorf("Effective = %d..%d, want %d..%d", gotMin, gotMax, tc.wantMin, tc.wantMax)
			}
		})
	}
}

func TestMalformedEntriesReportedOthersApply(t *testing.T) {
	data := map[string]string{SchedulesKey: `
- name: good
  nodeGroup: general-a
  start: "0 8 * * *"
  duration: 2h
  minSize: 3
- name: bad-cron
  nodeGroup: general-a
  start: "0 25 * * *"
  duration: 2h
  minSize: 3
- name: bad-zone
  nodeGroup: general-a
  start: "0 8 * * *"
  duration: 2h
  timeZone: Mars/Olympus
  minSize: 3
- name: unknown-group
  nodeGroup: nope
  start: "0 8 * * *"
  duration: 2h
  minSize: 3
- name: no-min
  nodeGroup: general-a
  start: "0 8 * * *"
  duration: 2h
- name: max-below-min
  nodeGroup: general-a
  start: "0 8 * * *"
  duration: 2h
  minSize: 5
  maxSize: 4
- name: typo
  nodeGroup: general-a
  start: "0 8 * * *"
  duration: 2h
  minimum: 3
- nodeGroup: general-a
  start: "0 8 * * *"
  duration: 2h
  minSize: 3
- name: good
  nodeGroup: general-a
  start: "0 9 * * *"
  duration: 2h
  minSize: 3
- name: zero-duration
  nodeGroup: general-a
  start: "0 8 * * *"
  duration: 0s
  minSize: 3
`, LeadTimeKey: "soon"}
	c := Parse(data, known("general-a"))
	if len(c.Entries) != 1 || c.Entries[0].Name != "good" {
		t.Errorf("entries %+v, want only good", c.Entries)
	}
	if c.LeadTime != DefaultLeadTime {
		t.Errorf("lead time %s, want the default after a malformed one", c.LeadTime)
	}
	want := []string{
		`leadTime: "soon"`,
		`schedules "bad-cron": start "0 25 * * *"`,
		`schedules "bad-zone": timeZone "Mars/Olympus"`,
		`schedules "unknown-group": nodeGroup: "nope" is not a node group`,
		`schedules "no-min": minSize: missing`,
		`schedules "max-below-min": maxSize 4: below minSize 5`,
		`schedules "typo": `,
		`schedules #8: name: missing`,
		`schedules "good": name: "good" is used by an earlier item`,
		`schedules "zero-duration": duration "0s": must be positive`,
	}
	if len(c.Problems) != len(want) {
		t.Fatalf("problems %v, want %d", c.Problems, len(want))
	}
	for i, w := range want {
		if got := c.Problems[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, got, w)
		}
	}
	if got := c.Problems[6].Error(); !strings.Contains(got, "minimum") {
		t.Errorf("unknown field not named: %q", got)
	}
}

func TestNotAListAndAbsent(t *testing.T) {
	if c := Parse(nil, nil); len(c.Entries)+len(c.Triggers)+len(c.Problems) != 0 || c.LeadTime != DefaultLeadTime {
		t.Errorf("absent ConfigMap: %+v", c)
	}
	c := Parse(map[string]string{SchedulesKey: "name: x", TimeZoneKey: "Nowhere/Land"}, nil)
	if len(c.Problems) != 2 || c.Problems[0].Key != TimeZoneKey || c.Problems[1].Key != SchedulesKey {
		t.Errorf("problems %v, want the time zone and the schedules key", c.Problems)
	}
}

func TestDefaultTimeZone(t *testing.T) {
	c := Parse(map[string]string{TimeZoneKey: "America/New_York", SchedulesKey: `
- name: ny
  nodeGroup: g
  start: "0 9 * * *"
  duration: 1h
  minSize: 2
`}, nil)
	if len(c.Entries) != 1 {
		t.Fatalf("problems %v", c.Problems)
	}
	if b, _ := c.At(inZone(t, "UTC", "2026-07-01 13:30")); b["g"].Min != 2 {
		t.Errorf("09:30 in New York (13:30 UTC in summer) not in the window: %+v", b)
	}
}

// On the days Berlin changes its clocks, the nightly window opens at 19:00
// local time: 17:00 UTC in summer time (from 29 March 2026), 18:00 UTC in
// winter time (from 25 October 2026), ten minutes ahead with the lead.
func TestDSTChangeDays(t *testing.T) {
	c := Parse(map[string]string{SchedulesKey: officeHours, LeadTimeKey: "10m"}, known("general-a"))
	for _, tc := range []struct {
		utc  string
		want int
	}{
		{"2026-03-29 16:49", 0}, {"2026-03-29 16:50", 14}, {"2026-03-29 19:59", 14}, {"2026-03-29 20:00", 0},
		{"2026-10-25 16:50", 0}, {"2026-10-25 17:49", 0}, {"2026-10-25 17:50", 14}, {"2026-10-25 20:59", 14}, {"2026-10-25 21:00", 0},
	} {
		if b, _ := c.At(inZone(t, "UTC", tc.utc)); b["general-a"].Min != tc.want {
			t.Errorf("%s UTC: scheduled minimum %d, want %d", tc.utc, b["general-a"].Min, tc.want)
		}
	}
}
