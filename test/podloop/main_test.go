// Package podloop runs tidal's pod loop against a real Kubernetes control
// plane, with real metrics APIs and a real Prometheus. It has its own
// cluster so that it runs beside the node-loop tests (test/integration).
package podloop

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *localcluster.Cluster) { cluster = c })
}

func poll(t *testing.T, timeout time.Duration, msg string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	testenv.Poll(t, timeout, msg, cond)
}

func newNamespace(t *testing.T) string { t.Helper(); return testenv.NewNamespace(t, cluster.Client) }

func deleteNodesOnCleanup(t *testing.T, prefixes ...string) {
	testenv.DeleteNodesOnCleanup(t, cluster.Client, prefixes...)
}

func groupNodes(ctx context.Context, group string) ([]corev1.Node, error) {
	return testenv.GroupNodes(ctx, cluster.Client, group)
}

func isReady(n *corev1.Node) bool { return core.IsNodeReady(n) }

type tidal = testenv.Tidal

var (
	freeAddress = testenv.FreeAddress
	writeGroups = testenv.WriteGroups
	deployment  = testenv.Deployment
	metricValue = testenv.MetricValue
)
