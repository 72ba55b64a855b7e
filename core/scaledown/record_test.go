package scaledown

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The evictions a restarted tidal reads back are those it wrote; bad
// entries are named and left out, the others kept.
func TestDecodeEvictions(t *testing.T) {
	evs := []Eviction{{"rs-a", now.Add(-time.Minute)}, {"rs-b", now.Add(-1500 * time.Millisecond)}}
	got, errs := DecodeEvictions(EncodeEvictions(evs), now)
	if len(errs) != 0 || fmt.Sprint(got) != fmt.Sprint(evs) {
		t.Fatalf("decoded %v (errors %v), want %v", got, errs, evs)
	}
	for _, tc := range []struct {
		name, raw string
		want      int
		errs      []string
	}{
		{"empty list", `[]`, 0, nil},
		{"not JSON", `rs-a at noon`, 0, []string{"not a list of evictions"}},
		{"an object, not a list", `{"controller":"rs-a"}`, 0, []string{"not a list of evictions"}},
		{"a bad time", `[{"controller":"rs-a","at":"noon"}]`, 0, []string{"not a list of evictions"}},
		{"no controller", `[{"at":"2026-01-01T00:00:00Z"},{"controller":"rs-b","at":"2025-12-31T23:59:00Z"}]`, 1,
			[]string{"eviction 0: no controller"}},
		{"no time", `[{"controller":"rs-a"}]`, 0, []string{"eviction 0 (controller rs-a): no time"}},
		{"far in the future", `[{"controller":"rs-a","at":"2026-01-01T00:05:00Z"}]`, 0, []string{"later than now"}},
		{"ahead by a skewed clock", `[{"controller":"rs-a","at":"2026-01-01T00:00:30Z"}]`, 1, nil},
		{"older than the memory: dropped, not an error", `[{"controller":"rs-a","at":"2025-12-31T22:00:00Z"}]`, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := DecodeEvictions(tc.raw, now)
			if len(got) != tc.want {
				t.Errorf("%d evictions %v, want %d", len(got), got, tc.want)
			}
			if len(errs) != len(tc.errs) {
				t.Fatalf("errors %v, want %d containing %v", errs, len(tc.errs), tc.errs)
			}
			for i, want := range tc.errs {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %q, want it to contain %q", errs[i], want)
				}
			}
		})
	}
}
