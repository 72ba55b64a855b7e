package core

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// namedGroup is a node group with a name and sizes only.
type namedGroup struct {
	cloudprovider.NodeGroup
	id       string
	min, max int
}

func (g *namedGroup) Id() string   { return g.id }
func (g *namedGroup) MinSize() int { return g.min }
func (g *namedGroup) MaxSize() int { return g.max }

// The publisher reads an iteration's report alone: group health, removals
// and unneeded times come from it, not from the loop's state.
func TestPublisherStatusFromTheReport(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	since := now.Add(-7 * time.Minute)
	groups := []groupSizes{
		{id: "a", minSize: 1, maxSize: 5, target: 3},
		{id: "b", maxSize: 4, target: 2},
		{id: "c", maxSize: 2, problem: "cannot read target size: timeout"},
	}
	r := &Iteration{
		observed: observed{now: now, nodeGroups: groups},
		health:   clusterstate.Health{Healthy: true, Registered: 5, Ready: 4, NotStarted: 1},
		scaleDown: &scaleDownReport{plan: &scaledown.Plan{
			Unneeded:    []scaledown.Unneeded{{Node: "n2", Group: "a", Utilization: 0.25}},
			Unremovable: []scaledown.Unremovable{{Node: "n3", Reason: scaledown.NotUnderutilized}}}},
		groups: map[string]clusterstate.GroupView{
			"a": {ID: "a", Registered: 3, Ready: 2, Upcoming: 1},
			"b": {ID: "b", Registered: 2, Ready: 2, BackedOff: true, BackoffReason: "OutOfResources", BackoffUntil: now.Add(time.Minute)},
		},
		removing:      []string{"n1"},
		unneededSince: map[string]time.Time{"n2": since},
	}
	opts := Options{}
	opts.ScaleDown.Enabled = true
	r.limits = limitsOf(opts)
	p := &publisher{metrics: NewMetrics(prometheus.NewRegistry(), false)}
	s := StatusOf(r)
	sd := s.ClusterWide.ScaleDown
	if sd.Status != "InProgress" || len(sd.Removing) != 1 || sd.Removing[0] != "n1" || sd.NotUnderutilized != 1 {
		t.Errorf("scale-down status %+v, want InProgress removing n1, one node not underutilized", sd)
	}
	if len(sd.Unneeded) != 1 || sd.Unneeded[0].Since != since.Format(time.RFC3339) {
		t.Errorf("unneeded %+v, want n2 since %s", sd.Unneeded, since.Format(time.RFC3339))
	}
	want := map[string]string{"a": "Healthy", "b": "BackedOff", "c": "Unusable"}
	for _, g := range s.NodeGroups {
		if g.Health != want[g.Name] {
			t.Errorf("group %s: health %s (%s), want %s", g.Name, g.Health, g.Reason, want[g.Name])
		}
	}
	if a := s.NodeGroups[0]; a.Registered != 3 || a.Ready != 2 || a.Upcoming != 1 || a.Target != 3 {
		t.Errorf("group a: %+v, want 3 registered, 2 ready, 1 upcoming, target 3", a)
	}
	setGauges(p.metrics, r)
	if v := testutil.ToFloat64(p.metrics.NodeGroupBackoff.WithLabelValues("b")); v != 1 {
		t.Errorf("backoff gauge of b = %v, want 1", v)
	}
	if v := testutil.ToFloat64(p.metrics.NodeGroupSize.WithLabelValues("a", "upcoming")); v != 1 {
		t.Errorf("upcoming gauge of a = %v, want 1", v)
	}
	p.publishCapacity(r)
	if v := p.capacity.Load(); v == nil || v.adding["a"] != 1 || v.adding["b"] != 0 {
		t.Errorf("capacity view %+v, want group a adding 1 node", v)
	}
}

// An iteration holds the groups' sizes as plain values, copied when it
// ends: a rendering made later reads what the iteration saw, not what the
// cloud's group says by then.
func TestIterationCopiesGroupSizes(t *testing.T) {
	g := &namedGroup{id: "a", min: 1, max: 5}
	o := &observation{now: time.Unix(1_800_000_000, 0), groups: []*groupObservation{{group: g, target: 3}},
		groupOfNode: map[string]string{"n1": "a"}}
	r := &Iteration{observed: observedOf(o)}
	g.min, g.max = 2, 9
	s := StatusOf(r)
	if len(s.NodeGroups) != 1 {
		t.Fatalf("node groups %+v, want a", s.NodeGroups)
	}
	if a := s.NodeGroups[0]; a.Name != "a" || a.MinSize != 1 || a.MaxSize != 5 || a.Target != 3 {
		t.Errorf("group a: %+v, want min 1, max 5, target 3 as observed", a)
	}
}
