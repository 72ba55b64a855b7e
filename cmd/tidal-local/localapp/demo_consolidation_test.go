package localapp

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestConsolidationSummary: the phase's lines give the cost per hour at the
// end without and with consolidation, each with its nodes, and say what
// did not complete.
func TestConsolidationSummary(t *testing.T) {
	var out bytes.Buffer
	prices := map[string]float64{"general-a": 0.19, "general-b": 0.19, "highmem-a": 0.5}
	printConsolidationSummary(&out, []consolidationResult{
		{nodes: map[string]int{"general-a": 1, "highmem-a": 2}, cost: 1.19, after: 30 * time.Second},
		{replace: true, nodes: map[string]int{"general-a": 2, "general-b": 1}, cost: 0.57, after: 41500 * time.Millisecond},
	}, prices)
	s := out.String()
	for _, want := range []string{
		"two 8-CPU highmem-a nodes at 0.50/h", "4-CPU general-a nodes at 0.19/h",
		"cost per hour at the end, without consolidation: 1.19 (nodes: general-a 1, highmem-a 2; 30.00s after the batch ended)\n",
		"cost per hour at the end, with consolidation (--consolidation-replace): 0.57 (nodes: general-a 2, general-b 1; 41.50s after the batch ended)\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	printConsolidationSummary(&out, []consolidationResult{{replace: true, nodes: map[string]int{"highmem-a": 2}, cost: -1,
		failed: "the highmem-a nodes not replaced within 3m0s"}}, prices)
	if s := out.String(); !strings.Contains(s, "with consolidation (--consolidation-replace): - (nodes: highmem-a 2;") ||
		!strings.Contains(s, "incomplete: the highmem-a nodes not replaced within 3m0s") {
		t.Errorf("an incomplete run without a known cost should read - and say why:\n%s", s)
	}
	out.Reset()
	if printConsolidationSummary(&out, nil, prices); out.Len() != 0 {
		t.Errorf("no run prints nothing, got %q", out.String())
	}
}
