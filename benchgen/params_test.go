package benchgen

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var errTest = errors.New("test write error")

func TestGroupSize(t *testing.T) {
	tests := []struct {
		p, g int
		want []int
	}{
		{10, 3, []int{4, 3, 3}},
		{2, 5, []int{1, 1, 0, 0, 0}},
		{7, 7, []int{1, 1, 1, 1, 1, 1, 1}},
		{0, 2, []int{0, 0}},
		{11, 4, []int{3, 3, 3, 2}},
	}
	for _, tt := range tests {
		got := make([]int, tt.g)
		for g := range got {
			got[g] = groupSize(tt.p, tt.g, g)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("P=%d G=%d: counts %v, want %v", tt.p, tt.g, got, tt.want)
		}
	}
}

// TestPendingCounts checks the per-group pending counts of the presets and
// of an uneven split, both in PendingGroups and in the generated pods.
func TestPendingCounts(t *testing.T) {
	uneven := S1()
	uneven.P, uneven.G = 23, 10
	tests := []struct {
		name   string
		params Params
		want   func(g int) int
	}{
		{"S1", S1(), func(int) int { return 30 }},
		{"S2", S2(), func(int) int { return 100 }},
		{"S3", S3(), func(int) int { return 200 }},
		{"S4", S4(), func(int) int { return 300 }},
		{"S5", S5(), func(int) int { return 500 }},
		{"23 over 10", uneven, func(g int) int { return 2 + boolIntInt(g < 3) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &builder{p: tt.params, rng: rng{seed: tt.params.Seed}}
			groups := b.pendingGroups()
			pods := b.pendingPods(groups)
			perOwner := map[string]int{}
			for _, p := range pods {
				perOwner[ownerName(p)]++
			}
			for g, pg := range groups {
				want := tt.want(g)
				if pg.Count != want || perOwner[rsName(pg.App)] != want {
					t.Errorf("group %d: Count %d, %d pods, want %d", g, pg.Count, perOwner[rsName(pg.App)], want)
				}
			}
		})
	}
}

func boolIntInt(v bool) int { return int(boolInt(v)) }

func TestValidate(t *testing.T) {
	for _, name := range PresetNames() {
		p, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	tests := []struct {
		name   string
		mutate func(*Params)
		want   string
	}{
		{"no node groups", func(p *Params) { p.K = 0 }, "K"},
		{"no pending groups", func(p *Params) { p.G = 0 }, "G"},
		{"negative nodes", func(p *Params) { p.N = -1 }, "negative"},
		{"inverted under range", func(p *Params) { p.UnderMin = 50 }, "UnderMin"},
		{"jitter 100", func(p *Params) { p.Jitter = 100 }, "Jitter"},
		{"group above NGMax", func(p *Params) { p.NGMax = 19 }, "NGMax"},
		{"replicas overflow", func(p *Params) { p.N, p.M = 1<<20, 1<<12 }, "int32"},
	}
	for _, tt := range tests {
		p := S1()
		tt.mutate(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestGeneratePanicsOnInvalidParams(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Generate with K=0 did not panic")
		}
	}()
	p := S1()
	p.K = 0
	Generate(p)
}

func TestPreset(t *testing.T) {
	if p, err := Preset("S3"); err != nil || p != S3() {
		t.Errorf("Preset(S3) = %+v, %v", p, err)
	}
	_, err := Preset("S6")
	if err == nil || !strings.Contains(err.Error(), `"S6"`) || !strings.Contains(err.Error(), "S1, S2, S3, S4, S5") {
		t.Errorf("Preset(S6) error = %v, want one naming S6 and the accepted sizes", err)
	}
}

func TestPadded(t *testing.T) {
	tests := []struct{ got, want string }{
		{nodeName(0), "node-00000"},
		{nodeName(123456), "node-123456"},
		{nodeGroupID(7), "ng-07"},
		{nodeGroupID(123), "ng-123"},
		{runningPodName(42, 7), "run-00042-007"},
		{pendingPodName(3, 1234), "pend-003-01234"},
		{rsName(runningApp(5)), "rs-run-005"},
		{templateName(nodeGroupID(1)), "template-node-for-ng-01"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
