package app

import "testing"

func TestSupportsNominations(t *testing.T) {
	for _, tc := range []struct {
		major, minor string
		want         bool
	}{
		{"1", "35", true}, {"1", "36", true}, {"1", "35+", true}, {"2", "0", true},
		{"1", "34", false}, {"1", "34+", false}, {"", "", false}, {"1", "x", false},
	} {
		if got := supportsNominations(tc.major, tc.minor); got != tc.want {
			t.Errorf("supportsNominations(%q, %q) = %v, want %v", tc.major, tc.minor, got, tc.want)
		}
	}
}
