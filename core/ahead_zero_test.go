package core

import (
	"context"
	"testing"
)

// A workload scaled from zero: provision-ahead pictures its first replica
// before any pod of it exists, and asks for an iteration at once, so the
// node for it is planned without waiting for the pod to be unschedulable.
func TestProvisionAheadFromZero(t *testing.T) {
	a := newAheadLoop(true)
	a.ProvisionAhead(context.Background(), webWorkload(), 1, autoscalerRef)
	select {
	case <-a.urgent:
	default:
		t.Fatal("ProvisionAhead did not ask for an iteration at once")
	}
	got := a.d.observer.aheadPods(a.clock.Now())
	if len(got) != 1 || !pictured(got[0]) {
		t.Fatalf("0 -> 1 with no pod: pictured %d pods, want the first replica", len(got))
	}
	a.addPods(1, nil)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("the replica exists: pictured %d, want none", len(got))
	}
}
