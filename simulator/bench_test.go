package simulator_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// BenchmarkEquivalenceGroups splits the pending pods of the bench-gen
// clusters, as tidal's informers hold them and listed in a new order every
// iteration, into equivalence groups: with no key cached (the first
// iteration, or pods all new) and with every key cached (the iterations
// after). groups is how many groups the pending pods make: as many as the
// generator's pending groups when pods of one ReplicaSet schedule alike.
func BenchmarkEquivalenceGroups(b *testing.B) {
	for _, s := range []struct {
		name string
		p    func() benchgen.Params
	}{{"S2", benchgen.S2}, {"S3", benchgen.S3}, {"S4", benchgen.S4}, {"S5", benchgen.S5}} {
		b.Run(s.name, func(b *testing.B) {
			c := benchload.Cluster(b, s.p())
			r := benchload.Rand(1)
			orders := make([][]*corev1.Pod, 4)
			for i := range orders {
				orders[i] = benchgen.ListerOrder(r, c.PendingPods)
			}
			for _, cached := range []bool{false, true} {
				name := "cold"
				if cached {
					name = "cached"
				}
				b.Run(name, func(b *testing.B) {
					keys := simulator.NewEquivalenceKeys()
					keys.Group(orders[0])
					var groups []*simulator.PodGroup
					i := 0
					b.ReportAllocs()
					for b.Loop() {
						if !cached {
							keys = simulator.NewEquivalenceKeys()
						}
						groups = keys.Group(orders[i%len(orders)])
						i++
					}
					b.ReportMetric(float64(len(groups)), "groups")
				})
			}
		})
	}
}
