package scaleup

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
)

// BenchmarkScaleUpUnchanged is the scale-up decision of the iterations
// after a scale-up while its nodes are coming: the asked-for nodes count as
// upcoming, and nothing else changed but the order the lister returns the
// pending pods in (sorted as the node loop sorts them: priority, creation,
// namespace, name). The decision then asks for nothing, and Memory gives it
// again; reused/op is the share of iterations where it did (1 is the
// target).
func BenchmarkScaleUpUnchanged(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			bn := newBench(b, benchload.Cluster(b, s.p()))
			ctx := context.Background()
			in := settled(b, ctx, bn)
			var m Memory
			if _, _, err := m.Decide(ctx, in); err != nil {
				b.Fatal(err)
			}
			i, reused := 1, 0
			run(b, func() {
				next := in
				next.Pending = bn.keys.Group(loopOrder(bn.order[i%listerOrders]))
				i++
				plan, ok, err := m.Decide(ctx, next)
				if err != nil {
					b.Fatal(err)
				}
				if len(plan.ScaleUps) > 0 {
					b.Fatalf("the decision asked for %d scale-ups with every earlier one upcoming", len(plan.ScaleUps))
				}
				if ok {
					reused++
				}
			})
			b.ReportMetric(float64(reused)/float64(b.N), "reused/op")
		})
	}
}

// settled is the input after the decisions' scale-ups were asked for,
// until a decision asks for nothing more: their nodes upcoming.
func settled(b *testing.B, ctx context.Context, bn *bench) Input {
	in := bn.in
	in.Pending = bn.keys.Group(loopOrder(bn.order[0]))
	for range 10 {
		plan := mustDecide(b, ctx, in)
		if len(plan.ScaleUps) == 0 {
			break
		}
		in.Groups = withUpcoming(in.Groups, plan.ScaleUps)
	}
	return in
}

// withUpcoming is groups after ups were asked for: their nodes upcoming.
func withUpcoming(groups []Group, ups []ScaleUp) []Group {
	out := slices.Clone(groups)
	for _, up := range ups {
		for i := range out {
			if out[i].ID == up.Group {
				out[i].Upcoming += up.To - up.From
				out[i].Target = up.To
			}
		}
	}
	return out
}

// loopOrder is pods in the order the node loop decides them in
// (SelectPending's).
func loopOrder(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	sortPending(out)
	return out
}
