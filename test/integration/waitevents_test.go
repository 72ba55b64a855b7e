package integration

import (
	"context"
	"testing"
	"time"
)

// TestPodsAwaitingTheirNodesAreToldOnlyOfTheScaleUp: the pods of
// mixedPods ask for a group's 2 nodes, its maximum, which register behind a
// startup taint; tidal decides every second while they start, each decision
// finding the group at its maximum. The pods were counted on those nodes:
// each is told it triggered the scale-up (the same message, however often)
// and none that no node group can help it, and all run on the 2 nodes.
func TestPodsAwaitingTheirNodesAreToldOnlyOfTheScaleUp(t *testing.T) {
	parallel(t)
	ns, tl, _, _ := nominatedMix(t, "ev", 2, []string{"--scan-interval=1s", "--leader-elect=false"})
	decisions := func() float64 {
		t.Helper()
		n, err := metricValue(tl.Address, `tidal_function_duration_seconds_count{function="main"}`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := decisions()
	poll(t, 30*time.Second, "3 decisions while the nodes start", func(context.Context) (bool, error) {
		return decisions() >= before+3, nil
	})
	releaseNodes(t, ns, "ev")
	waitRunning(t, ns, "small", 2, 60*time.Second)
	waitRunning(t, ns, "big", 2, 60*time.Second)
	ctx := context.Background()
	refused, err := podsWithEvent(t, ctx, ns, "NotTriggerScaleUp")
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 {
		t.Fatalf("pods awaiting the nodes asked for them were told no node group can help: %v", refused)
	}
	events, err := eventsFor(t, ctx, ns, "TriggeredScaleUp")
	if err != nil {
		t.Fatal(err)
	}
	const want = "pod triggered scale-up: [{ev 0->2 (max: 2)}]"
	told := map[string]bool{}
	for _, e := range events {
		if e.Message != want {
			t.Errorf("pod %s: %q, want only %q", e.InvolvedObject.Name, e.Message, want)
		}
		told[e.InvolvedObject.Name] = true
	}
	if len(told) != 4 || nodeCount(t, "ev") != 2 {
		t.Fatalf("%d pods told of the scale-up, group ev has %d nodes: want 4 and 2", len(told), nodeCount(t, "ev"))
	}
}
