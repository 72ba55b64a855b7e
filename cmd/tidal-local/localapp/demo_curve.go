package localapp

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

const (
	// demoMiddleLoad is the plateau the load holds on its way down from
	// the peak: a partial scale-in, after which which replicas went
	// decides which nodes stay.
	demoMiddleLoad = 60
	// demoRampStep is how long the load stays at each step of a decline.
	// Each change of the load makes the pod loop sync at once, so the
	// replicas follow one at a time once the stabilization window passed.
	demoRampStep = 2 * time.Second
)

// replicasFor is the replica count the autoscaler settles on for a load.
func replicasFor(load int) int32 {
	return int32((load + demoPerReplica - 1) / demoPerReplica)
}

// rampLoads are the loads a fall from `from` to `to` passes through: one
// for each replica count in between, each one replica's worth (per) below
// the last, ending at to.
func rampLoads(from, to, per int) []int {
	var loads []int
	for r := (from+per-1)/per - 1; r > (to+per-1)/per; r-- {
		loads = append(loads, r*per)
	}
	return append(loads, to)
}

// ramp lowers the load from `from` to `to` one replica's worth every
// demoRampStep, as traffic that declines rather than drops: the autoscaler then
// takes replicas away a few at a time, and the ReplicaSet, choosing each
// time among the replicas left, thins the most crowded nodes first.
func (d *demoPass) ramp(ctx context.Context, from, to int) error {
	for i, load := range rampLoads(from, to, demoPerReplica) {
		if i > 0 {
			if err := sleepCtx(ctx, demoRampStep); err != nil {
				return err
			}
		}
		d.sim.Set(d.key(), metrics.Constant(float64(load)))
	}
	return nil
}

// waitReplicas waits for the Deployment's desired count to be want.
func (d *demoPass) waitReplicas(ctx context.Context, want int32) error {
	return poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		dep, err := d.client.AppsV1().Deployments(d.ns).Get(ctx, demoApp, metav1.GetOptions{})
		return err == nil && ptr.Deref(dep.Spec.Replicas, 0) == want, nil
	})
}

// plateau ramps the load down from the peak to demoMiddleLoad, waits for
// the replicas to follow and holds the load there for d.plateauHold, long
// enough for scale-down to remove a node the scale-in left underutilized or
// empty. It records how many nodes there are at the end of the hold.
func (d *demoPass) plateau(ctx context.Context, res *passResult) error {
	d.tl.note("%s: load falls from %d to %d requests/s, %d every %s", d.label(), demoPeakLoad, demoMiddleLoad,
		demoPerReplica, demoRampStep)
	if err := d.ramp(ctx, demoPeakLoad, demoMiddleLoad); err != nil {
		return err
	}
	middle := replicasFor(demoMiddleLoad)
	if err := d.waitReplicas(ctx, middle); err != nil {
		return d.timedOut(ctx, res, "replicas not scaled down to the plateau", err)
	}
	if err := sleepCtx(ctx, d.plateauHold); err != nil {
		return err
	}
	n, err := nodeCount(ctx, d.client)
	if err != nil {
		return err
	}
	res.plateauNodes = n
	d.tl.note("%s: %d replicas for %s, on %d node(s)", d.label(), middle, d.plateauHold, n)
	return nil
}
