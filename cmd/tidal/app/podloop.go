package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// podLoopMetrics are the pod loop's Prometheus metrics.
type podLoopMetrics struct{}

func newPodLoopMetrics(prometheus.Registerer) *podLoopMetrics { return &podLoopMetrics{} }

// newPodLoop builds the pod loop for one leadership term, registering its
// informers on env.factory before it starts. A nil runner means the pod loop
// is not part of this build yet.
func newPodLoop(env *loopEnv) (func(context.Context), error) { return nil, nil }
