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

// updateNode changes a node as a client does: read, change, write, and
// again on a conflict with the many writers of a node.
func updateNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := cluster.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = cluster.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update node %s: %v", name, err)
	}
}

func groupNodes(ctx context.Context, group string) ([]corev1.Node, error) {
	return testenv.GroupNodes(ctx, cluster.Client, group)
}

type tidal = testenv.Tidal

func startTidal(t *testing.T, args ...string) *tidal {
	t.Helper()
	return testenv.StartTidal(context.Background(), t, cluster.KubeconfigPath, args...)
}

var (
	freeAddress = testenv.FreeAddress
	writeGroups = testenv.WriteGroups
	deployment  = testenv.Deployment
	metricValue = testenv.MetricValue
	podReady    = testenv.PodReady
)
