// Package podloop runs tidal's pod loop against a real Kubernetes control
// plane, with real metrics APIs and a real Prometheus, and the two loops
// together: cooperation, and the whole of tidal run as the ServiceAccount of
// deploy/'s manifests. Its cluster authorizes with RBAC and keeps an audit
// log of tidal's ServiceAccount. Each test that runs tidal has a cluster of
// its own (clusters), and the suite runs beside the node-loop tests
// (test/integration).
package podloop

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// clusters are the suite's local clusters, as many as four at once
// (testenv.ClustersEnv sets another number). They authorize with RBAC and
// keep an audit log of tidal's ServiceAccount (auditLog).
var clusters = testenv.NewPool("podloop", 4, func(dir string) (localcluster.Options, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(rbacAuditPolicy), 0o600); err != nil {
		return localcluster.Options{}, err
	}
	return localcluster.Options{APIServerFlags: []string{"--authorization-mode=RBAC",
		"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(dir, "audit.log"), "--audit-log-format=json"}}, nil
})

// auditLog is the audit log of the test's cluster: the requests of
// tidal's ServiceAccount (rbac_test.go).
func auditLog(t testing.TB) string { return filepath.Join(cluster(t).Dir, "audit.log") }

func TestMain(m *testing.M) {
	testenv.Run(m, []*testenv.Pool{clusters})
}

// parallel runs the test beside the suite's other parallel tests, on a
// cluster of its own: call it first in the test.
func parallel(t *testing.T) {
	t.Parallel()
	clusters.Lease(t)
}

// cluster is the test's cluster: the one it leased, or one it leases now
// (a serial test has no need to lease first).
func cluster(t testing.TB) *localcluster.Cluster { return clusters.Lease(t) }

func poll(t *testing.T, timeout time.Duration, msg string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	testenv.Poll(t, timeout, msg, cond)
}

func newNamespace(t *testing.T) string { t.Helper(); return testenv.NewNamespace(t, cluster(t).Client) }

func deleteNodesOnCleanup(t *testing.T, prefixes ...string) {
	testenv.DeleteNodesOnCleanup(t, cluster(t).Client, prefixes...)
}

func groupNodes(t testing.TB, ctx context.Context, group string) ([]corev1.Node, error) {
	return testenv.GroupNodes(ctx, cluster(t).Client, group)
}

// waitFirstNodeReady waits until the group has its one node, Ready.
func waitFirstNodeReady(t *testing.T, group string, timeout time.Duration) {
	t.Helper()
	poll(t, timeout, "the first node of "+group+" Ready", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, group)
		return len(nodes) == 1 && isReady(&nodes[0]), err
	})
}

func isReady(n *corev1.Node) bool { return core.IsNodeReady(n) }

type tidal = testenv.Tidal

var (
	writeGroups = testenv.WriteGroups
	deployment  = testenv.Deployment
	metricValue = testenv.MetricValue
)
