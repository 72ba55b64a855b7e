package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/test/testenv"
)

func TestScaleDownNeverBreaksAPDB(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "rnd-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: rnd-a, minSize: 1, maxSize: 30, initialSize: 8, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 200ms}\n"
	preloadNodes(t, groups)
	ctx := context.Background()
	watcher := testenv.WatchPDBs(t, cluster(t).Client, ns)
	tl := startTidal(t, append(scaleDownFlags, "--scale-down-unneeded-time=1s", "--local-node-groups="+writeGroups(t, groups))...)

	seed := uint64(20261122)
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	// min is the fewest healthy pods the app's PDB allows: minAvailable,
	// or replicas minus maxUnavailable (unavailable), which the
	// disruption controller computes from the current replica count, so
	// it moves with every scale.
	type app struct {
		replicas    int32
		min         int32
		unavailable int32
	}
	apps := map[string]*app{}
	serial := 0
	cpus := []string{"250m", "500m", "750m", "1", "1500m"}
	create := func() {
		serial++
		name := fmt.Sprintf("w%02d", serial)
		a := &app{replicas: 2 + rng.Int32N(5)}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
		if rng.IntN(2) == 0 {
			a.min = a.replicas - 1 - rng.Int32N(a.replicas-1)
			pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(a.min))
		} else {
			a.unavailable = 1 + rng.Int32N(a.replicas-1)
			a.min = a.replicas - a.unavailable
			pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(a.unavailable))
		}
		apps[name] = a
		watcher.Guard(name, int(a.min))
		createPDB(t, pdb)
		createDeployment(t, spread(deployment(ns, name, a.replicas, cpus[rng.IntN(len(cpus))], "512Mi")))
	}
	// scale sets a Deployment's replicas as a client does: again on a
	// conflict with the Deployment controller's writes.
	scale := func(name string, a *app, replicas int32) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := cluster(t).Client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = replicas
			_, err = cluster(t).Client.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("scale %s to %d: %v", name, replicas, err)
		}
		a.replicas = replicas
		if a.unavailable > 0 {
			// Guard re-arms once the new minimum is met: after a
			// scale-up the new pods are not Ready yet, and that is no
			// disruption.
			a.min = replicas - a.unavailable
			watcher.Guard(name, int(a.min))
		}
	}
	remove := func(name string) {
		watcher.Unguard(name)
		delete(apps, name)
		_ = cluster(t).Client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = cluster(t).Client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	for i := 0; i < 4; i++ {
		create()
	}
	for round := 0; round < 50; round++ {
		names := make([]string, 0, len(apps))
		for n := range apps {
			names = append(names, n)
		}
		slices.Sort(names)
		switch r := rng.IntN(10); {
		case r < 3 || len(names) < 2:
			create()
		case r < 6:
			// Shrink, never below the PDB's minimum plus one.
			n := names[rng.IntN(len(names))]
			if a := apps[n]; a.replicas > a.min+1 {
				scale(n, a, a.min+1+rng.Int32N(a.replicas-a.min-1))
			}
		case r < 8:
			n := names[rng.IntN(len(names))]
			if a := apps[n]; a.replicas < 8 {
				scale(n, a, a.replicas+1+rng.Int32N(2))
			}
		default:
			remove(names[rng.IntN(len(names))])
		}
		time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
	}
	time.Sleep(3 * time.Second)

	violations, events := watcher.Result()
	evicted, _ := metricValue(tl.Address, `tidal_evicted_pods_total{eviction_result="succeeded"}`)
	removed := 0.0
	for _, kind := range []string{"empty", "underutilized"} {
		v, _ := metricValue(tl.Address, fmt.Sprintf(`tidal_scaled_down_nodes_total{node_group="rnd-a",reason=%q}`, kind))
		removed += v
	}
	t.Logf("%d pod events observed, %v pods evicted, %v nodes removed, %d nodes left", events, evicted, removed, nodeCount(t, "rnd-a"))
	if removed < 3 || evicted < 3 {
		t.Fatalf("only %v nodes removed and %v pods evicted: the rounds did not exercise scale-down", removed, evicted)
	}
	if len(violations) > 0 {
		t.Fatalf("%d PDB violations, first: %v", len(violations), violations[:min(5, len(violations))])
	}
}
