package integration

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tidal-local (what `make run` runs) plays the demo with and without
// provision-ahead, ends by itself, and ends with the summary table.
func TestLocalDemoEndsWithSummary(t *testing.T) {
	bin := buildTidalLocal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Short scale-down timers keep the test brief; the demo is the same.
	cmd := exec.CommandContext(ctx, bin, "--address="+freeAddress(t), "--scale-down-unneeded-time=2s",
		"--scale-down-delay-after-add=0s", "--hpa-downscale-stabilization=3s", "--hpa-sync-period=2s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output of tidal-local:\n%s", out.String())
		}
	})
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("tidal-local failed after %v: %v", time.Since(start).Round(time.Second), err)
	}
	text := out.String()
	i := strings.Index(text, "\nSummary:")
	if i < 0 {
		t.Fatal("no summary at the end")
	}
	summary := text[i:]
	t.Logf("demo ran %v%s", time.Since(start).Round(time.Second), summary)
	for _, want := range []string{"with provision-ahead", "without", "pod-seconds spent waiting for nodes",
		"load fall -> added nodes removed", "node-hours, pool general-a"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if !regexp.MustCompile(`outcome\s+complete\s+complete`).MatchString(summary) {
		t.Fatal("a pass did not complete")
	}
	m := regexp.MustCompile(`load step -> node group scale-up request\s+([0-9.]+)s\s+([0-9.]+)s`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no scale-up request times in the summary")
	}
	// The times are the demo's figures, not a pass or fail: on a shared
	// machine any bound on a latency can be missed. Each pass must have
	// measured one.
	for i, pass := range []string{"with provision-ahead", "without"} {
		if v, err := strconv.ParseFloat(m[i+1], 64); err != nil || v <= 0 {
			t.Errorf("the scale-up request time %s is %q, want a positive number of seconds", pass, m[i+1])
		}
	}
	for _, want := range []string{"WaitingForCapacity=True", "for node group general-a", "event ScaledUpGroup", "event ScaleDown"} {
		if !strings.Contains(text[:i], want) {
			t.Errorf("the timeline never showed %q", want)
		}
	}
}
