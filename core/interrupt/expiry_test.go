package interrupt

import (
	"slices"
	"testing"
	"time"
)

func TestExpiries(t *testing.T) {
	now := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	age := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name     string
		nodes    []Aged
		lifetime map[string]time.Duration
		want     []string
	}{{
		name:     "the oldest node past the lifetime of each group",
		nodes:    []Aged{{"a1", "a", age(8 * day), true, false, ""}, {"a2", "a", age(9 * day), true, false, ""}, {"a3", "a", age(day), true, false, ""}, {"b1", "b", age(8 * day), true, false, ""}},
		lifetime: map[string]time.Duration{"a": 7 * day, "b": 7 * day},
		want:     []string{"a2", "b1"},
	}, {
		name:     "no lifetime, no group, not ready, young: none",
		nodes:    []Aged{{"a1", "a", age(8 * day), true, false, ""}, {"x", "", age(80 * day), true, false, ""}, {"b1", "b", age(8 * day), false, false, ""}, {"c1", "c", age(day), true, false, ""}},
		lifetime: map[string]time.Duration{"b": 7 * day, "c": 7 * day, "": 7 * day},
	}, {
		name: "a drifted node is renewed whatever its age; the oldest candidate first",
		nodes: []Aged{{"a1", "a", age(day), true, false, "launch template version 1, the group launches version 2"},
			{"a2", "a", age(2 * day), true, false, "instance type m5.large"}, {"b1", "b", age(day), true, false, ""}},
		want: []string{"a2"},
	}, {
		name:     "one at a time: a group with a node busy waits",
		nodes:    []Aged{{"a1", "a", age(8 * day), true, false, ""}, {"a2", "a", age(day), true, true, ""}},
		lifetime: map[string]time.Duration{"a": 7 * day},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range Expiries(tc.nodes, tc.lifetime, now) {
				got = append(got, a.Node)
				if (a.Mark.Kind != Expired && a.Mark.Kind != Drifted) || !a.New || a.Mark.Deadline != (time.Time{}) {
					t.Errorf("action %+v: want a new mark of kind expired or drifted without deadline", a)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Expiries = %v, want %v", got, tc.want)
			}
		})
	}
}
