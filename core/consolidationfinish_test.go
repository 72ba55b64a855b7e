package core

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/consolidate"
)

// TestSavingDoneWhenOldNodesGone: a replacement's saving counts as done
// when its old nodes are gone, not when it was proposed, started, drained
// or settled; one whose old node stays counts as kept, saving nothing.
func TestSavingDoneWhenOldNodesGone(t *testing.T) {
	reg := prometheus.NewRegistry()
	d := &Decider{metrics: NewMetrics(reg, false)}
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	r := consolidate.Replacement{Kind: consolidate.KindSingle, Old: []consolidate.Old{{Node: "big-0", Group: "big"}}, Group: "small",
		Count: 1, Saving: 0.31}
	d.metrics.ConsolidationProposed(r.Saving)
	d.metrics.Replacement(r.Kind, "started", r.Saving)
	d.metrics.Replacement(r.Kind, "drained", r.Saving)
	d.mem.consolidation = consolidate.State{InFlight: &consolidate.InFlight{Replacement: r, Draining: at}}.Done(at)
	done := func() float64 {
		return counter(t, reg, "tidal_consolidation_saving_per_hour_total", map[string]string{"stage": "done"})
	}
	obs := func(now time.Time, nodes ...string) *observation {
		o := &observation{now: now}
		for _, n := range nodes {
			o.nodes = append(o.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return o
	}
	d.finish(context.Background(), obs(at, "big-0", "small-0"))
	if v := done(); v != 0 {
		t.Fatalf("saving done %v while the old node is still there, want 0 (proposed, started and drained are not done)", v)
	}
	d.finish(context.Background(), obs(at.Add(time.Minute), "small-0"))
	if v := done(); v != 0.31 {
		t.Fatalf("saving done %v once the old node is gone, want 0.31", v)
	}
	if len(d.mem.consolidation.Finishing) != 0 {
		t.Fatalf("still finishing %+v after done", d.mem.consolidation.Finishing)
	}
	d.finish(context.Background(), obs(at.Add(2*time.Minute), "small-0"))
	if v := done(); v != 0.31 {
		t.Fatalf("saving done %v after another iteration, want 0.31 counted once", v)
	}

	// A replacement whose old node's removal failed: kept after the wait.
	d.mem.consolidation = consolidate.State{InFlight: &consolidate.InFlight{Replacement: r, Draining: at}}.Done(at)
	d.finish(context.Background(), obs(at.Add(oldNodesGoneWithin), "big-0"))
	if v := done(); v != 0.31 {
		t.Fatalf("saving done %v with the old node kept, want still 0.31", v)
	}
	if v := counter(t, reg, "tidal_consolidation_replacements_total", map[string]string{"kind": r.Kind, "result": "kept"}); v != 1 || len(d.mem.consolidation.Finishing) != 0 {
		t.Fatalf("kept %v, finishing %+v; want one kept, nothing finishing", v, d.mem.consolidation.Finishing)
	}
}

// counter is the value of the family's counter with the labels, 0 when
// there is none.
func counter(t *testing.T, reg *prometheus.Registry, family string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
