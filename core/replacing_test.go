package core

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/interrupt"
)

// The status ConfigMap and tidal explain show the nodes being replaced,
// why and how far: a spot node taken away (with its deadline), a node
// drifted and marked this iteration, one past its lifetime that waits for
// capacity (not marked yet: no since).
func TestReplacingInStatusAndDecisions(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	marks := map[string]interrupt.Mark{
		"spot-1": {Kind: cloudprovider.SpotInterruption, Detail: "terminate", Deadline: now.Add(2 * time.Minute), Received: now.Add(-time.Second)},
	}
	expired := []renewal{
		{Action: interrupt.Action{Node: "old-1", Group: "od", Mark: interrupt.Mark{Kind: interrupt.Expired, Detail: "older than 168h0m0s", Received: now}}},
		{Action: interrupt.Action{Node: "drift-1", Group: "od", Mark: interrupt.Mark{Kind: interrupt.Drifted, Detail: "launch template version 3, not 4", Received: now}}},
	}
	r := &Iteration{observed: observed{now: now},
		replacing: replacingOf(map[string]string{"spot-1": "spot"}, marks, expired, map[string]bool{"drift-1": true})}
	want := []ReplacingEntry{
		{Node: "drift-1", NodeGroup: "od", Cause: "drifted", Detail: "launch template version 3, not 4", State: ReplacingDraining, Since: "2026-11-28T09:00:00Z"},
		{Node: "old-1", NodeGroup: "od", Cause: "expired", Detail: "older than 168h0m0s", State: ReplacingWaitingForCapacity},
		{Node: "spot-1", NodeGroup: "spot", Cause: "spot-interruption", Detail: "terminate", State: ReplacingDraining,
			Deadline: "2026-11-28T09:02:00Z", Since: "2026-11-28T08:59:59Z"},
	}
	if diff := cmp.Diff(want, StatusOf(r).ClusterWide.Replacing); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, DecisionsOf(r).Replacing); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}
