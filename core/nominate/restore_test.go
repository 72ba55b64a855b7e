package nominate

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestRestore(t *testing.T) {
	standing := State{"a": nom("a", "n1")}
	bound := pending("a", "")
	bound.Node = "n2"
	for _, tc := range []struct {
		name     string
		uid      string
		pod      Pod
		cleared  string
		starting bool
		want     bool
	}{
		{"cleared from a starting node: set again", "a", pending("a", ""), "n1", true, true},
		{"the node can take pods: the next decision places it", "a", pending("a", ""), "n1", false, false},
		{"not tidal's nomination", "b", pending("b", ""), "n1", true, false},
		{"tidal's nomination names another node", "a", pending("a", ""), "n2", true, false},
		{"nominated again meanwhile", "a", pending("a", "n3"), "n1", true, false},
		{"bound meanwhile", "a", bound, "n1", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := Restore(standing, types.UID(tc.uid), tc.pod, tc.cleared, tc.starting)
			if ok != tc.want || ok && c != set("a", "n1") {
				t.Fatalf("Restore = %+v, %v; want %v", c, ok, tc.want)
			}
		})
	}
}
