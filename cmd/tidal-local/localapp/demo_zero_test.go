package localapp

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestZeroSummaryLines(t *testing.T) {
	var out bytes.Buffer
	printZeroSummary(&out, []zeroResult{
		{name: "warm", pool: "general-a", poolNodes: 1, toReady: 60 * time.Millisecond},
		{name: "cold", pool: "general-b", failed: "first replica not Ready within 3m0s"},
	})
	s := out.String()
	for _, want := range []string{
		"activation -> first replica Ready, a node with room already present (pool general-a, nodes at activation: 1): 0.06s",
		"activation -> first replica Ready, no node present (pool general-b, nodes at activation: 0): incomplete: first replica not Ready within 3m0s",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	printZeroSummary(&out, nil)
	if out.Len() != 0 {
		t.Errorf("a phase that measured nothing printed %q", out.String())
	}
}
