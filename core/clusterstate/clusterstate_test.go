package clusterstate

import (
	"strings"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

var opts = Options{
	MaxNodeProvisionTime: 15 * time.Minute, InitialBackoff: 5 * time.Minute, MaxBackoff: 30 * time.Minute,
	BackoffReset: 3 * time.Hour, MaxTotalUnreadyPercentage: 45, OkTotalUnreadyCount: 3,
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func inst(id string, state cloudprovider.InstanceState, err *cloudprovider.InstanceErrorInfo) cloudprovider.Instance {
	return cloudprovider.Instance{Id: id, Status: &cloudprovider.InstanceStatus{State: state, ErrorInfo: err}}
}

var capacityErr = &cloudprovider.InstanceErrorInfo{ErrorClass: cloudprovider.OutOfResourcesErrorClass, ErrorCode: "InsufficientInstanceCapacity", ErrorMessage: "no stock"}

func TestUpcomingCountsUnregisteredUnreadyAndMissing(t *testing.T) {
	tr := New(opts)
	tr.Update(t0, []GroupObservation{{
		ID: "g", Target: 5,
		Instances: []cloudprovider.Instance{
			inst("a", cloudprovider.InstanceRunning, nil), // registered, ready
			inst("b", cloudprovider.InstanceRunning, nil), // registered, not ready
			inst("c", cloudprovider.InstanceCreating, nil),
			inst("d", cloudprovider.InstanceDeleting, nil),
		},
		Nodes: map[string]NodeObservation{"a": {Name: "a", Ready: true}, "b": {Name: "b"}},
	}})
	v := tr.Group("g")
	// b (unready), c (creating), and one request with no instance yet.
	if v.Upcoming != 3 || v.Registered != 2 || v.Ready != 1 || v.BackedOff || len(v.Starting) != 1 || v.Starting[0] != "b" {
		t.Fatalf("view %+v: want upcoming 3, registered 2, ready 1, b starting", v)
	}
}

func TestCapacityErrorBacksOffAtOnceAndCancels(t *testing.T) {
	tr := New(opts)
	obs := []GroupObservation{{ID: "spot", Target: 2, Instances: []cloudprovider.Instance{
		inst("x", cloudprovider.InstanceCreating, capacityErr), inst("y", cloudprovider.InstanceCreating, capacityErr),
	}}}
	cancels := tr.Update(t0, obs)
	if len(cancels) != 1 || len(cancels[0].Instances) != 2 || !cancels[0].Failed || !strings.Contains(cancels[0].Reason, "InsufficientInstanceCapacity") {
		t.Fatalf("cancels = %+v, want both failed instances cancelled with the error", cancels)
	}
	v := tr.Group("spot")
	if !v.BackedOff || v.BackoffUntil != t0.Add(5*time.Minute) || v.Upcoming != 0 || !strings.Contains(v.BackoffReason, "out of resources") {
		t.Fatalf("view %+v: want backed off 5m with no upcoming nodes", v)
	}
	// Seen again before the cancel took effect: no longer backoff.
	tr.Update(t0.Add(time.Second), obs)
	if tr.Group("spot").BackoffUntil != t0.Add(5*time.Minute) {
		t.Fatal("the same failure seen twice doubled the backoff")
	}
}

func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	tr := New(opts)
	now := t0
	want := []time.Duration{5, 10, 20, 30, 30}
	for i, w := range want {
		tr.BackOff("g", now, capacityErr)
		if got := tr.Group("g").BackoffUntil.Sub(now); got != w*time.Minute {
			t.Fatalf("failure %d: backoff %v, want %v", i+1, got, w*time.Minute)
		}
		now = tr.Group("g").BackoffUntil.Add(time.Second)
	}
	now = now.Add(3 * time.Hour)
	tr.BackOff("g", now, capacityErr)
	if got := tr.Group("g").BackoffUntil.Sub(now); got != 5*time.Minute {
		t.Fatalf("after 3h quiet the backoff is %v, want 5m again", got)
	}
}

func TestProvisionTimeout(t *testing.T) {
	tr := New(opts)
	obs := []GroupObservation{{ID: "g", Target: 1, Instances: []cloudprovider.Instance{inst("slow", cloudprovider.InstanceCreating, nil)}}}
	if c := tr.Update(t0, obs); len(c) != 0 || tr.Group("g").Upcoming != 1 {
		t.Fatalf("fresh request: cancels %v, view %+v", c, tr.Group("g"))
	}
	if c := tr.Update(t0.Add(14*time.Minute), obs); len(c) != 0 {
		t.Fatalf("cancelled before the provision time: %v", c)
	}
	c := tr.Update(t0.Add(16*time.Minute), obs)
	if len(c) != 1 || c[0].Instances[0].Id != "slow" || c[0].Failed || !strings.Contains(c[0].Reason, "ProvisionTimeout") {
		t.Fatalf("cancels after 16m = %+v, want the slow instance", c)
	}
	if v := tr.Group("g"); !v.BackedOff || v.Upcoming != 0 {
		t.Fatalf("view %+v: want backed off, nothing upcoming", v)
	}
}

func TestHealth(t *testing.T) {
	tr := New(opts)
	old := t0.Add(-time.Hour)
	nodes := []NodeObservation{{Ready: true, Created: old}, {Ready: true, Created: old}, {Created: old}, {Created: old},
		{Created: old}, {Created: t0.Add(-time.Minute)}}
	h := tr.UpdateHealth(t0, nodes)
	// 3 unready of 6 is within max(3, 45% of 6 = 2).
	if !h.Healthy || h.Unready != 3 || h.NotStarted != 1 {
		t.Fatalf("health %+v: want healthy with 3 unready, 1 not started", h)
	}
	nodes = append(nodes, NodeObservation{Created: old})
	if h := tr.UpdateHealth(t0, nodes); h.Healthy || !strings.Contains(h.Reason, "4 of 7 nodes are unready") {
		t.Fatalf("health %+v: want unhealthy with 4 unready", h)
	}
}

// --max-node-startup-time: an unready node registered less than that ago
// is starting, an older one is unready, whatever the provision time.
func TestStartupTime(t *testing.T) {
	created := t0.Add(-20 * time.Minute)
	tests := []struct {
		name                string
		startup, provision  time.Duration
		notStarted, unready int
	}{
		{"startup time longer than the node's age", 30 * time.Minute, 15 * time.Minute, 1, 0},
		{"startup time shorter than the node's age", 10 * time.Minute, 30 * time.Minute, 0, 1},
		{"no startup time: the provision time", 0, 30 * time.Minute, 1, 0},
	}
	for _, tc := range tests {
		o := opts
		o.MaxNodeStartupTime, o.MaxNodeProvisionTime = tc.startup, tc.provision
		h := New(o).UpdateHealth(t0, []NodeObservation{{Name: "booting", Created: created}, {Name: "up", Ready: true, Created: created}})
		if h.NotStarted != tc.notStarted || h.Unready != tc.unready {
			t.Errorf("%s: health %+v, want %d not started, %d unready", tc.name, h, tc.notStarted, tc.unready)
		}
	}
}

// A group's own maxnodeprovisiontime replaces the flag's for its requests
// alone.
func TestProvisionTimeoutPerGroup(t *testing.T) {
	for _, tc := range []struct {
		name       string
		own        time.Duration
		after      time.Duration
		wantCancel bool
		wantWithin string
	}{
		{name: "flag, within", after: 14 * time.Minute},
		{name: "flag, past", after: 16 * time.Minute, wantCancel: true, wantWithin: "within 15m0s"},
		{name: "shorter own, past it", own: 5 * time.Minute, after: 6 * time.Minute, wantCancel: true, wantWithin: "within 5m0s"},
		{name: "shorter own, within", own: 5 * time.Minute, after: 4 * time.Minute},
		{name: "longer own, past the flag", own: 30 * time.Minute, after: 16 * time.Minute},
		{name: "longer own, past it", own: 30 * time.Minute, after: 31 * time.Minute, wantCancel: true, wantWithin: "within 30m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(opts)
			obs := []GroupObservation{
				{ID: "g", Target: 1, MaxNodeProvisionTime: tc.own, Instances: []cloudprovider.Instance{inst("slow", cloudprovider.InstanceCreating, nil)}},
				{ID: "other", Target: 1, Instances: []cloudprovider.Instance{inst("o", cloudprovider.InstanceCreating, nil)}},
			}
			tr.Update(t0, obs)
			var mine []Cancel
			for _, c := range tr.Update(t0.Add(tc.after), obs) {
				if c.Group == "g" {
					mine = append(mine, c)
				} else if tc.after <= opts.MaxNodeProvisionTime {
					t.Errorf("group without its own option cancelled before the flag's time: %+v", c)
				}
			}
			if got := len(mine) == 1; got != tc.wantCancel {
				t.Fatalf("after %v with own time %v: cancels %+v, want cancelled %v", tc.after, tc.own, mine, tc.wantCancel)
			}
			if tc.wantCancel && !strings.Contains(mine[0].Reason, tc.wantWithin) {
				t.Fatalf("reason %q does not name the time (%s)", mine[0].Reason, tc.wantWithin)
			}
		})
	}
}
