package act

import (
	"slices"
	"testing"
)

// TestDryRunCountsAStandingDecisionOnce: a decision nothing acts on comes
// back every iteration; it is new only the first time, and again after an
// iteration that did not make it. A failed iteration forgets nothing.
func TestDryRunCountsAStandingDecisionOnce(t *testing.T) {
	d := newDryRun()
	steps := []struct {
		name    string
		keys    []string
		decided bool
		newKeys []string
	}{
		{"first decision", []string{"up/a"}, true, []string{"up/a"}},
		{"same decision again", []string{"up/a"}, true, nil},
		{"another joins", []string{"up/a", "down/n1"}, true, []string{"down/n1"}},
		{"iteration failed after deciding part", []string{"up/a"}, false, nil},
		{"both still stand", []string{"up/a", "down/n1"}, true, nil},
		{"one goes away", []string{"down/n1"}, true, nil},
		{"it comes back: new again", []string{"up/a", "down/n1"}, true, []string{"up/a"}},
	}
	for _, s := range steps {
		d.begin()
		var got []string
		for _, k := range s.keys {
			if d.note(k) {
				got = append(got, k)
			}
		}
		d.end(s.decided)
		if !slices.Equal(got, s.newKeys) {
			t.Errorf("%s: new decisions %v, want %v (standing before: %v)", s.name, got, s.newKeys, d.standingKeys())
		}
	}
}
