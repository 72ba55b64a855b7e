// Package podloop runs tidal's pod loop against a real Kubernetes control
// plane, with real metrics APIs and a real Prometheus, and the two loops
// together: cooperation, and the whole of tidal run as the ServiceAccount of
// deploy/'s manifests. Its cluster authorizes with RBAC and keeps an audit
// log of tidal's ServiceAccount, and runs beside the node-loop tests
// (test/integration).
package podloop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

var cluster *localcluster.Cluster

// auditLog is the API server's audit log: the requests of tidal's
// ServiceAccount (rbac_test.go).
var auditLog string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tidal-podloop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(rbacAuditPolicy), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditLog = filepath.Join(dir, "audit.log")
	opts := localcluster.Options{APIServerFlags: []string{"--authorization-mode=RBAC",
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-format=json"}}
	testenv.MainWith(m, opts, func(c *localcluster.Cluster) { cluster = c }, func() { os.RemoveAll(dir) })
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

// waitFirstNodeReady waits until the group has its one node, Ready.
func waitFirstNodeReady(t *testing.T, group string, timeout time.Duration) {
	t.Helper()
	poll(t, timeout, "the first node of "+group+" Ready", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(ctx, group)
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
