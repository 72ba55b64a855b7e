package nodeschedule

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

const budgetWindows = `
- name: office-freeze          # no replacement nor removal of general-a in office hours
  nodeGroup: general-a
  start: "0 8 * * 1-5"
  duration: 10h
  timeZone: Europe/Berlin
  nodes: 0
- name: night-slow             # the cluster: 10% at night
  start: "0 22 * * *"
  duration: 8h
  nodes: "10%"
- name: lunch-one
  nodeGroup: general-a
  start: "0 12 * * 1-5"
  duration: 1h
  timeZone: Europe/Berlin
  nodes: 1
`

// TestBudgetWindows: the budgets of the windows open at a time, and when
// that next changes.
func TestBudgetWindows(t *testing.T) {
	c := Parse(map[string]string{BudgetsKey: budgetWindows, TimeZoneKey: "Europe/Berlin"}, known("general-a"))
	if len(c.Problems) > 0 || len(c.Budgets) != 3 {
		t.Fatalf("parse: budgets %d, problems %v", len(c.Budgets), c.Problems)
	}
	for _, tc := range []struct {
		name, at string
		// want: the names open, the cluster's budgets, general-a's.
		names, cluster, group string
		next                  string
	}{
		{"Monday before office hours: none", "2026-03-02 07:59", "", "", "", "2026-03-02 08:00"},
		{"office hours open, no lead time", "2026-03-02 08:00", "office-freeze", "", "0", "2026-03-02 12:00"},
		{"lunch overlaps office hours", "2026-03-02 12:30", "office-freeze,lunch-one", "", "0,1", "2026-03-02 13:00"},
		{"the freeze's closing minute is closed", "2026-03-02 18:00", "", "", "", "2026-03-02 22:00"},
		{"Saturday night: the cluster's", "2026-03-07 23:00", "night-slow", "10%", "", "2026-03-08 06:00"},
		{"Saturday noon: weekdays only", "2026-03-07 12:30", "", "", "", "2026-03-07 22:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, next := c.BudgetsAt(berlin(t, tc.at))
			list := func(bs []scaledown.DisruptionBudget) string {
				var s []string
				for _, b := range bs {
					s = append(s, b.String())
				}
				return strings.Join(s, ",")
			}
			if n := strings.Join(got.Names, ","); n != tc.names || list(got.Cluster) != tc.cluster || list(got.Groups["general-a"]) != tc.group {
				t.Fatalf("open %q, cluster %q, group %q; want %q, %q, %q", n, list(got.Cluster), list(got.Groups["general-a"]),
					tc.names, tc.cluster, tc.group)
			}
			if want := berlin(t, tc.next); !next.Equal(want) {
				t.Fatalf("next change %v, want %v", next, want)
			}
		})
	}
}

// TestMalformedBudgetWindows: each malformed item is a problem naming it
// and the field; the others apply.
func TestMalformedBudgetWindows(t *testing.T) {
	item := func(name, extra string) string {
		return fmt.Sprintf("- name: %s\n  start: \"0 8 * * *\"\n  duration: 1h\n%s", name, extra)
	}
	list := strings.Join([]string{
		item("ok", "  nodes: 2\n"),
		item("no-nodes", ""),
		item("bad-nodes", "  nodes: \"120%\"\n"),
		item("negative", "  nodes: -1\n"),
		item("unknown-group", "  nodes: 1\n  nodeGroup: nope\n"),
		item("unknown-field", "  nodes: 1\n  minSize: 3\n"),
		item("ok", "  nodes: 1\n"),
		"- start: \"0 8 * * *\"\n  duration: 1h\n  nodes: 1\n",
		item("bad-start", "  nodes: 1\n  start: \"0 25 * * *\"\n"),
	}, "")
	c := Parse(map[string]string{BudgetsKey: list}, known("general-a"))
	if len(c.Budgets) != 1 || c.Budgets[0].Name != "ok" || c.Budgets[0].Budget.String() != "2" {
		t.Fatalf("budgets %+v, want only the first ok", c.Budgets)
	}
	want := []string{`"no-nodes": nodes: missing`, `"bad-nodes": nodes: disruption budget "120%"`, `"negative": nodes:`,
		`"unknown-group": nodeGroup: "nope"`, `"unknown-field"`, `"ok": name: "ok" is used`, `#8: name: missing`, `"bad-start"`}
	if len(c.Problems) != len(want) {
		t.Fatalf("problems %v, want %d", c.Problems, len(want))
	}
	for i, w := range want {
		if got := c.Problems[i].Error(); !strings.HasPrefix(got, BudgetsKey+" ") || !strings.Contains(got, w) {
			t.Errorf("problem %d: %q, want one of %s naming %s", i, got, BudgetsKey, w)
		}
	}
}
