// Package integration runs tidal against a real Kubernetes control plane
// started once for the whole package (localcluster). Tests run one after
// another: node groups and nodes are cluster-wide, so each test names its
// own groups and removes its nodes and namespace when it ends.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tidal-autoscaler/tidal/localcluster"
)

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start local cluster: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "local cluster ready in %v\n", time.Since(start).Round(time.Millisecond))
	cluster = c
	code := m.Run()
	cancel()
	c.Stop()
	os.Exit(code)
}

// poll waits until cond holds, failing the test with msg after timeout.
func poll(t *testing.T, timeout time.Duration, msg string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, msg, lastErr)
	}
}

// newNamespace makes a namespace for one test and deletes it, with
// everything in it, when the test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := "t-" + rand.String(6)
	ctx := context.Background()
	_, err := cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		err := cluster.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
		poll(t, 60*time.Second, "namespace "+name+" to be gone", func(ctx context.Context) (bool, error) {
			_, err := cluster.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
	return name
}

// deleteNodesOnCleanup removes, when the test ends, every node whose name
// starts with one of the prefixes.
func deleteNodesOnCleanup(t *testing.T, prefixes ...string) {
	t.Cleanup(func() {
		ctx := context.Background()
		nodes, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("list nodes: %v", err)
			return
		}
		for _, n := range nodes.Items {
			for _, p := range prefixes {
				if len(n.Name) >= len(p) && n.Name[:len(p)] == p {
					if err := cluster.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
						t.Errorf("delete node %s: %v", n.Name, err)
					}
				}
			}
		}
	})
}
