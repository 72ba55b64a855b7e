package localapp

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestDemoRecorderFigures(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := &demoRecorder{now: func() time.Time { return t0.Add(100 * time.Second) },
		pods: map[types.UID]*podTimes{
			"old":     {seen: t0.Add(-time.Second), bound: t0.Add(50 * time.Second)},
			"fast":    {seen: t0.Add(10 * time.Second), bound: t0.Add(10*time.Second + 5*time.Millisecond)},
			"waited":  {seen: t0.Add(10 * time.Second), bound: t0.Add(13 * time.Second)},
			"waiting": {seen: t0.Add(90 * time.Second)},
		},
		nodes: map[string]*nodeTimes{
			"base":  {pool: "a", since: t0.Add(-time.Hour), existedBefore: true},
			"added": {pool: "a", since: t0.Add(20 * time.Second), until: t0.Add(56 * time.Second)},
			"other": {pool: "b", since: t0.Add(80 * time.Second)},
		},
	}
	longest, total := r.podWaits(t0)
	if longest != 10*time.Second || total != 13*time.Second+5*time.Millisecond {
		t.Errorf("podWaits = %v, %v; want 10s (still waiting) and 13.005s, the pod seen before the step left out", longest, total)
	}
	if now := r.nodesNow(); len(now) != 2 || now["a"] != 1 || now["b"] != 1 {
		t.Errorf("nodesNow = %v; want a: 1 (the added node has gone), b: 1", now)
	}
	h := r.nodeHours(t0, t0.Add(100*time.Second))
	if math.Abs(h["a"]-136.0/3600) > 1e-9 || math.Abs(h["b"]-20.0/3600) > 1e-9 {
		t.Errorf("nodeHours = %v; want a: 136 node-seconds (100 of the base node from the start, 36 added), b: 20", h)
	}
}

func TestDemoSummaryTable(t *testing.T) {
	var out bytes.Buffer
	printDemoSummary(&out, []passResult{
		{title: demoPasses[0].title, stepToScaleUp: 50 * time.Millisecond, stepToReady: 2250 * time.Millisecond, nodeHours: map[string]float64{"a": 0.019}, evictions: 0, plateauNodes: 2, endCost: 0.38},
		{title: demoPasses[1].title, stepToScaleUp: 340 * time.Millisecond, failed: "replicas not Ready within 3m0s", nodeHours: map[string]float64{"b": 0.5}, evictions: -1, endCost: -1},
		{title: demoPasses[2].title, evictions: 3, endCost: 0.69},
	})
	s := out.String()
	for _, want := range []string{"with provision-ahead and deletion cost", "without provision-ahead", "without deletion cost", "0.05s", "0.34s", "2.25s",
		"node-hours, pool a", "0.0190", "node-hours, pool b", "0.5000", "complete", "incomplete: replicas not Ready within 3m0s"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`evictions during scale-down +0 +- +3 `).MatchString(s) {
		t.Errorf("the evictions row should read 0, - (not read), 3:\n%s", s)
	}
	if !regexp.MustCompile(`nodes at the end of the 60 requests/s plateau +2 +- +- `).MatchString(s) {
		t.Errorf("the plateau row should read 2, - (not measured), -:\n%s", s)
	}
	if !regexp.MustCompile(`cost per hour at the end +0\.38 +- +0\.69 `).MatchString(s) {
		t.Errorf("the cost row should read 0.38, - (a pool without a price), 0.69:\n%s", s)
	}
	if lines := strings.Split(strings.TrimSpace(s), "\n"); !strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "outcome") {
		t.Errorf("the table should end with the outcome row:\n%s", s)
	}
}

func TestCostPerHour(t *testing.T) {
	prices := map[string]float64{"general-a": 0.19, "highmem-a": 0.5}
	if c, ok := costPerHour(map[string]int{"general-a": 2, "highmem-a": 1}, prices); !ok || math.Abs(c-0.88) > 1e-9 {
		t.Errorf("cost of 2 general-a and 1 highmem-a = %v, %v; want 0.88", c, ok)
	}
	if c, ok := costPerHour(map[string]int{"general-a": 1, "unpriced": 1}, prices); ok {
		t.Errorf("cost with a node of a pool without a price = %v, known; want unknown", c)
	}
	if c, ok := costPerHour(map[string]int{"unpriced": 0}, prices); !ok || c != 0 {
		t.Errorf("cost of no nodes = %v, %v; want 0, known", c, ok)
	}
}

func TestDemoRampLoads(t *testing.T) {
	for _, c := range []struct {
		from, to int
		want     []int
	}{
		{100, 60, []int{90, 80, 70, 60}},
		{60, 18, []int{50, 40, 30, 18}},
		{20, 18, []int{18}},
	} {
		if got := rampLoads(c.from, c.to, 10); !slices.Equal(got, c.want) {
			t.Errorf("rampLoads(%d, %d, 10) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if got := replicasFor(demoBaseLoad); got != 2 {
		t.Errorf("replicasFor(%d) = %d, want 2", demoBaseLoad, got)
	}
}
