package expander

import (
	"strings"
	"testing"
)

// FuzzParsePriorities feeds the priority expander's ConfigMap value and a
// node group name: no input panics, and a group's priority is the highest
// of the tiers one of whose expressions matches it.
func FuzzParsePriorities(f *testing.F) {
	for _, seed := range []struct{ value, group string }{
		{"10:\n  - .*\n50:\n  - spot-.*\n", "spot-a"},
		{"10:\n  - .*", "general-a"},
		{"1: [\"^eks-ng-[0-9a-f]{8}$\"]\n-5: [\".*-gpu\"]\n", "eks-ng-2a4b9f3c"},
		{"010: [a]\n10: [b]\n", "ab"},
		{"high: [.*]", "x"},
		{"10: .*", "x"},
		{"10:\n  - \"(\"", "x"},
		{"", "x"},
		{"99999999999999999999: [x]", "x"},
		{"10: []\n", "x"},
		{"10: [x]\n10: [y]\n", "x"},
		{"{}", ""},
		{"- 10", "x"},
		{"10: [\"(a+)+$\"]", strings.Repeat("a", 64) + "!"},
	} {
		f.Add(seed.value, seed.group)
	}
	f.Fuzz(func(t *testing.T, value, group string) {
		p, err := ParsePriorities(value)
		if err != nil {
			return
		}
		if p == nil || len(p.tiers) == 0 {
			t.Fatalf("%q parsed without error to no priorities", value)
		}
		want, wantOK := 0, false
		for _, tier := range p.tiers {
			for _, re := range tier.patterns {
				if re.MatchString(group) && (!wantOK || tier.priority > want) {
					want, wantOK = tier.priority, true
				}
			}
		}
		if got, ok := p.Of(group); got != want || ok != wantOK {
			t.Fatalf("Of(%q) = %d, %v; want %d, %v for %q", group, got, ok, want, wantOK, value)
		}
	})
}

// FuzzParseChain feeds --expander values: no input panics, and an accepted
// chain always ends with random, which breaks the last tie.
func FuzzParseChain(f *testing.F) {
	for _, seed := range []string{"least-waste", "priority,least-waste", "random", "price", " priority , most-pods ",
		"", ",", "priority,,random", "cheapest", "priority,random,least-waste", "least-waste\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		c, err := ParseChain(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--expander=") {
				t.Fatalf("error %q does not name --expander", err)
			}
			return
		}
		names := c.Names()
		if len(names) == 0 || names[len(names)-1] != RandomName {
			t.Fatalf("%q gives the chain %v, which does not end with %s", value, names, RandomName)
		}
	})
}
