package nodeschedule

import (
	"strings"
	"testing"
	"time"
)

const cpuTrigger = `
- name: spare-cpu
  nodeGroup: general-a
  scope: cluster
  resource: cpu
  threshold: 80
  for: 5m
  cooldown: 10m
  add: 2
`

func TestTriggerForCooldown(t *testing.T) {
	c := Parse(map[string]string{TriggersKey: cpuTrigger}, known("general-a"))
	if len(c.Triggers) != 1 || len(c.Problems) > 0 {
		t.Fatalf("triggers %+v, problems %v", c.Triggers, c.Problems)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	high := map[RateKey]float64{{"", ResourceCPU}: 85}
	low := map[RateKey]float64{{"", ResourceCPU}: 80}
	group := func(target int) []Group { return []Group{{ID: "general-a", Target: target, Min: 1, Max: 10}} }
	var st TriggerState
	for _, step := range []struct {
		name     string
		at       time.Duration
		rates    map[RateKey]float64
		target   int
		wantTo   int // 0: no raise
		wantNext time.Duration
	}{
		{name: "above, just now", at: 0, rates: high, target: 3, wantNext: 5 * time.Minute},
		{name: "above for less than for", at: 4 * time.Minute, rates: high, target: 3, wantNext: 5 * time.Minute},
		{name: "above for 5m: triggers once", at: 5 * time.Minute, rates: high, target: 3, wantTo: 5, wantNext: 15 * time.Minute},
		{name: "cooldown holds", at: 6 * time.Minute, rates: high, target: 5, wantNext: 15 * time.Minute},
		{name: "at the threshold is not above: tracking resets", at: 8 * time.Minute, rates: low, target: 5},
		{name: "above again after the cooldown, for starts anew", at: 16 * time.Minute, rates: high, target: 5,
			wantNext: 21 * time.Minute},
		{name: "triggers again", at: 21 * time.Minute, rates: high, target: 5, wantTo: 7, wantNext: 31 * time.Minute},
		{name: "unknown rate resets", at: 32 * time.Minute, rates: nil, target: 7},
		{name: "above again", at: 33 * time.Minute, rates: high, target: 9, wantNext: 38 * time.Minute},
		{name: "capped at the max", at: 38 * time.Minute, rates: high, target: 9, wantTo: 10, wantNext: 48 * time.Minute},
		{name: "at the max: nothing", at: 49 * time.Minute, rates: high, target: 10},
	} {
		d := Decide(c.Triggers, step.rates, group(step.target), st, t0.Add(step.at))
		st = d.State
		switch {
		case step.wantTo == 0 && len(d.Raises) > 0:
			t.Errorf("%s: raises %+v, want none", step.name, d.Raises)
		case step.wantTo > 0 && (len(d.Raises) != 1 || d.Raises[0].To != step.wantTo || d.Raises[0].From != step.target ||
			d.Raises[0].Entries[0] != "spare-cpu"):
			t.Errorf("%s: raises %+v, want %d -> %d", step.name, d.Raises, step.target, step.wantTo)
		}
		var wantNext time.Time
		if step.wantNext > 0 {
			wantNext = t0.Add(step.wantNext)
		}
		if !d.Next.Equal(wantNext) {
			t.Errorf("%s: next %s, want %s", step.name, d.Next, wantNext)
		}
	}
}

func TestTriggerPercentage(t *testing.T) {
	for _, tc := range []struct {
		add    string
		target int
		want   int
	}{
		{add: "20%", target: 10, want: 2},
		{add: "20%", target: 11, want: 3}, // 2.2 rounds up
		{add: "20%", target: 0, want: 1},  // at least one
		{add: "50%", target: 3, want: 2},
		{add: "3", target: 100, want: 3},
	} {
		c := Parse(map[string]string{TriggersKey: strings.Replace(cpuTrigger, "add: 2", "add: "+quote(tc.add), 1)}, nil)
		if len(c.Triggers) != 1 {
			t.Fatalf("add %s: %v", tc.add, c.Problems)
		}
		if got := c.Triggers[0].Nodes(tc.target); got != tc.want {
			t.Errorf("add %s of %d = %d, want %d", tc.add, tc.target, got, tc.want)
		}
	}
}

func quote(s string) string {
	if strings.HasSuffix(s, "%") {
		return `"` + s + `"`
	}
	return s
}

func TestGroupScopeAndOtherTriggersIndependent(t *testing.T) {
	c := Parse(map[string]string{TriggersKey: `
- name: a-mem
  nodeGroup: a
  resource: memory
  threshold: 70
  for: 1m
  cooldown: 5m
  add: 1
- name: b-cpu
  nodeGroup: b
  resource: cpu
  threshold: 70
  for: 1m
  cooldown: 5m
  add: 1
`}, known("a", "b"))
	if len(c.Triggers) != 2 || c.Triggers[0].Scope != ScopeNodeGroup {
		t.Fatalf("triggers %+v, problems %v", c.Triggers, c.Problems)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	rates := map[RateKey]float64{{"a", ResourceMemory}: 90, {"a", ResourceCPU}: 10, {"b", ResourceMemory}: 95, {"b", ResourceCPU}: 20,
		{"", ResourceCPU}: 90}
	groups := []Group{{ID: "a", Target: 1, Max: 5}, {ID: "b", Target: 1, Max: 5}}
	d := Decide(c.Triggers, rates, groups, TriggerState{}, t0)
	d = Decide(c.Triggers, rates, groups, d.State, t0.Add(time.Minute))
	if len(d.Raises) != 1 || d.Raises[0].Group != "a" {
		t.Errorf("raises %+v, want only a (b's cpu is low in its group)", d.Raises)
	}
}

func TestMalformedTriggers(t *testing.T) {
	base := "- name: x\n  nodeGroup: g\n  resource: cpu\n  threshold: 80\n  for: 1m\n  cooldown: 1m\n  add: 1\n"
	for _, tc := range []struct{ from, to, want string }{
		{"resource: cpu", "resource: gpu", `resource "gpu"`},
		{"threshold: 80", "threshold: 120", "threshold 120"},
		{"  threshold: 80\n", "", "threshold: missing"},
		{"for: 1m", "for: a while", `for "a while"`},
		{"cooldown: 1m", "cooldown: -1m", `cooldown "-1m": must be positive`},
		{"add: 1", "add: 0", "add 0"},
		{"add: 1", `add: "half"`, "add half"},
		{"add: 1", "scope: region\n  add: 1", `scope "region"`},
		{"nodeGroup: g", "nodeGroup: h", `nodeGroup: "h"`},
	} {
		c := Parse(map[string]string{TriggersKey: strings.Replace(base, tc.from, tc.to, 1)}, known("g"))
		if len(c.Triggers) != 0 || len(c.Problems) != 1 || !strings.Contains(c.Problems[0].Error(), tc.want) ||
			!strings.HasPrefix(c.Problems[0].Error(), `allocationTriggers "x": `) {
			t.Errorf("%s -> %s: problems %v, want one containing %q", tc.from, tc.to, c.Problems, tc.want)
		}
	}
}

func TestRates(t *testing.T) {
	r := Rates([]NodeUsage{
		{Group: "a", Ready: true, RequestedCPU: 500, AllocatableCPU: 1000, RequestedMemory: 1, AllocatableMemory: 4},
		{Group: "a", Ready: false, RequestedCPU: 1000, AllocatableCPU: 1000},
		{Group: "b", Ready: true, RequestedCPU: 1500, AllocatableCPU: 2000, RequestedMemory: 3, AllocatableMemory: 4},
		{Group: "", Ready: true, RequestedCPU: 0, AllocatableCPU: 1000},
	})
	for k, want := range map[RateKey]float64{{"", ResourceCPU}: 50, {"a", ResourceCPU}: 50, {"b", ResourceCPU}: 75,
		{"", ResourceMemory}: 50, {"b", ResourceMemory}: 75} {
		if got, ok := r[k]; !ok || got != want {
			t.Errorf("rate %v = %v (%v), want %v", k, got, ok, want)
		}
	}
}
