// Package integration runs tidal's node loop and clouds against a real
// Kubernetes control plane started once for the whole package
// (localcluster). Tests run one after another: node groups and nodes are
// cluster-wide, so each test names its own groups and removes its nodes and
// namespace when it ends. A test that starts no tidal and keeps to its own
// namespace and nodes calls t.Parallel() (see docs/testing.md); Go runs
// those together after the others.
package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// clusters are the suite's local clusters: as many as four run at once
// (testenv.ClustersEnv sets another number).
var clusters = testenv.NewPool("integration", 4, func(string) (localcluster.Options, error) {
	return localcluster.Options{}, nil
})

// benchClusters serve the end-to-end benchmark (make bench) and the test of
// benchgen's stored form: the ServiceAccount admission plugin and
// controller on, as in a real cluster; the ReplicaSet controller off,
// because the loader creates the ReplicaSets' pods itself (with the pods
// bound, as the scheduler would have bound them); pod GC off, because the
// loader creates the running pods before their nodes (so that the simulated
// kubelets find them running and leave them alone), which pod GC would take
// for orphans. Each test has a new one: a loaded cluster is not swept.
var benchClusters = testenv.NewPool("bench", 1, func(string) (localcluster.Options, error) {
	return localcluster.Options{ServiceAccounts: true, DisabledControllers: []string{"replicaset", "podgc"}}, nil
}).Fresh()

// benchCluster is the test's cluster of benchClusters.
func benchCluster(t testing.TB) *localcluster.Cluster { return benchClusters.Lease(t) }

func TestMain(m *testing.M) {
	testenv.Run(m, []*testenv.Pool{clusters, benchClusters})
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

// updateNode changes a node as a client does: read, change, write, and
// again on a conflict with the many writers of a node.
func updateNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := cluster(t).Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = cluster(t).Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update node %s: %v", name, err)
	}
}

func groupNodes(t testing.TB, ctx context.Context, group string) ([]corev1.Node, error) {
	return testenv.GroupNodes(ctx, cluster(t).Client, group)
}

type tidal = testenv.Tidal

func startTidal(t *testing.T, args ...string) *tidal {
	t.Helper()
	return testenv.StartTidal(context.Background(), t, cluster(t).KubeconfigPath, args...)
}

var (
	writeGroups = testenv.WriteGroups
	deployment  = testenv.Deployment
	metricValue = testenv.MetricValue
	podReady    = testenv.PodReady
)
