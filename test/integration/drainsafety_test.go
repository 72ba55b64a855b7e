package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/faults"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// startTidalWith runs tidal with its API clients behind tr (the local
// cloud keeps a client of its own, as a real cloud would), its log printed
// if the test fails.
func startTidalWith(t *testing.T, tr *faults.Transport, args ...string) *tidal {
	t.Helper()
	return startTidalOn(t, testenv.Listen(t), tr, args...)
}

// startTidalOn is startTidalWith serving its metrics on l.
func startTidalOn(t *testing.T, l net.Listener, tr *faults.Transport, args ...string) *tidal {
	t.Helper()
	ctx := testenv.LogOnFailure(context.Background(), t, 2)
	return testenv.StartTidalOn(ctx, t, l, cluster(t).KubeconfigPath, []app.Option{app.WithTransport(tr.Wrap), app.WithLocalCloudClient(cluster(t).Client)}, args...)
}

// iterations reads how many node-loop iterations tidal has completed.
func iterations(t *testing.T, tl *tidal) float64 {
	t.Helper()
	n, err := metricValue(tl.Address, `tidal_function_duration_seconds_count{function="main"}`)
	if err != nil {
		t.Fatalf("read tidal's metrics: %v", err)
	}
	return n
}

// waitIterations waits until tidal has completed n more iterations.
func waitIterations(t *testing.T, tl *tidal, n float64) {
	t.Helper()
	from := iterations(t, tl)
	poll(t, 60*time.Second, fmt.Sprintf("%v more node-loop iterations", n), func(context.Context) (bool, error) {
		return iterations(t, tl) >= from+n, nil
	})
}

// holdPods puts a finalizer on the pods, so that once evicted they stay
// terminating; it returns what releases every pod of ns.
func holdPods(t *testing.T, ns string, pods []corev1.Pod) func() {
	t.Helper()
	ctx := context.Background()
	for _, p := range pods {
		patch := []byte(`{"metadata":{"finalizers":["tidal.test/hold"]}}`)
		if _, err := cluster(t).Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	release := func() {
		list, _ := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		for _, p := range list.Items {
			if len(p.Finalizers) > 0 {
				_, _ = cluster(t).Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
		}
	}
	t.Cleanup(release)
	return release
}

// A drain waits for its evicted pods to be gone: an error reading a pod
// (a 503, a 429, a timeout) is no answer, and the node stays until the API
// says the pod is gone.
func TestDrainWaitsForEvictedPodsThroughAPIErrors(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "dw-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: dw-a, minSize: 0, maxSize: 5, initialSize: 3, zone: z, cpu: '4', memory: 16Gi}\n"
	preloadNodes(t, groups)
	deletions := testenv.WatchNodeDeletions(t, cluster(t).Client, local.NodeGroupLabel+"=dw-a")
	createDeployment(t, spread(deployment(ns, "held", 3, "500m", "512Mi")))
	release := holdPods(t, ns, waitRunning(t, ns, "held", 3, 30*time.Second))

	// Every read of one pod of the namespace fails.
	onePod := regexp.MustCompile(`^/api/v1/namespaces/` + ns + `/pods/[^/]+$`)
	tr := faults.New(1, faults.Rule{
		Match: func(r *http.Request, _ []byte) bool {
			return r.Method == http.MethodGet && onePod.MatchString(r.URL.Path)
		},
		Rate: 1, Kinds: []faults.Kind{faults.Unavailable, faults.TooManyRequests, faults.Timeout}})
	tl := startTidalWith(t, tr, append(scaleDownFlags, "--node-delete-delay-after-taint=1s", "--local-node-groups="+writeGroups(t, groups))...)

	var terminating []corev1.Pod
	poll(t, 60*time.Second, "evicted pods held terminating", func(ctx context.Context) (bool, error) {
		list, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		terminating = terminating[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				terminating = append(terminating, p)
			}
		}
		return len(terminating) > 0, err
	})
	// Long enough for a drain that took an error for "gone" to delete the
	// node (it did so within a second).
	waitIterations(t, tl, 5)
	for _, p := range terminating {
		if _, err := cluster(t).Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			t.Fatalf("node %s was deleted while its evicted pod %s was still terminating (%s)", p.Spec.NodeName, p.Name, tr)
		}
	}
	// The pods go; tidal, whose informer no longer has them, asks the API,
	// which still fails: that is no answer either.
	release()
	poll(t, 60*time.Second, "tidal to ask after its evicted pods, and fail", func(context.Context) (bool, error) {
		counts, _ := tr.Counts()
		return counts[faults.Unavailable]+counts[faults.TooManyRequests]+counts[faults.Timeout] >= 3, nil
	})
	for _, p := range terminating {
		if _, err := cluster(t).Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			t.Fatalf("node %s was deleted while the API failed to say whether its pod %s was gone (%s)", p.Spec.NodeName, p.Name, tr)
		}
	}
	tr.SetEnabled(false)
	poll(t, 60*time.Second, "the drained nodes removed once their pods are known gone", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "dw-a")
		return len(nodes) < 3, err
	})
	deleted, lost := deletions.Check(t, ns)
	t.Logf("%d node(s) removed; faults: %s", deleted, tr)
	if len(lost) > 0 {
		t.Fatalf("nodes deleted under their pods:\n%s", strings.Join(lost, "\n"))
	}
}

// isTaintWrite tells whether a request writes a Node of the prefix with the
// given taint key in its body, and which node.
func isTaintWrite(r *http.Request, body []byte, prefix, key string) (string, bool) {
	name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/nodes/")
	if r.Method != http.MethodPut || !ok || !strings.HasPrefix(name, prefix) || strings.Contains(name, "/") {
		return "", false
	}
	return name, bytes.Contains(body, []byte(key))
}

// A pod the scheduler binds to a node around the instant tidal removes it
// is never lost: tidal waits after its taint, reads the node's pods again
// and gives the node up. Each removal's taint write is held for a moment
// (a loaded API server), and a pod pinned to the node is created at a
// random time from the start of that write to as long after it lands.
func TestScaleDownNeverLosesAPodBoundDuringRemoval(t *testing.T) {
	parallel(t)
	const nodes, hold = 12, 1500 * time.Millisecond
	deleteNodesOnCleanup(t, "rc-")
	ns := newNamespace(t)
	groups := fmt.Sprintf("nodeGroups:\n- {name: rc-a, minSize: 0, maxSize: 20, initialSize: %d, zone: z, cpu: '4', memory: 16Gi}\n", nodes)
	preloadNodes(t, groups)
	deletions := testenv.WatchNodeDeletions(t, cluster(t).Client, local.NodeGroupLabel+"=rc-a")
	// Four nodes have a pod to move: their removals are drains.
	createDeployment(t, spread(deployment(ns, "moved", 4, "500m", "512Mi")))
	waitRunning(t, ns, "moved", 4, 30*time.Second)

	seed := uint64(20260611)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	// Pods still due when the test ends are not created.
	running, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	var mu sync.Mutex
	tried := map[string]bool{}
	tr := faults.New(seed)
	tr.Observe(func(r *http.Request, body []byte) {
		node, ok := isTaintWrite(r, body, "rc-a-", scaledown.ToBeDeletedTaint)
		mu.Lock()
		if !ok || tried[node] {
			mu.Unlock()
			return
		}
		tried[node] = true
		offset := time.Duration(rng.Int64N(int64(2 * hold)))
		mu.Unlock()
		time.AfterFunc(offset, func() { createPinnedPod(running, t, ns, node) })
		time.Sleep(hold)
	})
	startTidalWith(t, tr, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups))...)

	// Every removal tried has settled: its node is gone or untainted.
	poll(t, 120*time.Second, "ten removals tried and settled", func(ctx context.Context) (bool, error) {
		mu.Lock()
		names := make([]string, 0, len(tried))
		for n := range tried {
			names = append(names, n)
		}
		mu.Unlock()
		if len(names) < 10 {
			return false, nil
		}
		for _, name := range names {
			n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && hasToBeDeleted(n) {
				return false, nil
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	deleted, lost := deletions.Check(t, ns)
	kept := pinnedPodsBound(t, ns)
	t.Logf("%d removals tried: %d nodes removed, %d given up for a pod bound meanwhile", len(tried), deleted, kept)
	if len(lost) > 0 {
		t.Fatalf("nodes deleted under their pods:\n%s", strings.Join(lost, "\n"))
	}
	if kept == 0 || deleted == 0 {
		t.Fatalf("the test did not exercise the race: %d pods bound in time, %d nodes removed", kept, deleted)
	}
}

// createPinnedPod creates a pod only the node can run (no controller: once
// bound, it keeps the node).
func createPinnedPod(ctx context.Context, t *testing.T, ns, node string) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pin-" + node, Namespace: ns, Labels: map[string]string{"app": "pinned"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resourceQ("100m")}}}}}}
	if _, err := cluster(t).Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		t.Errorf("create pod pinned to %s: %v", node, err)
	}
}

// pinnedPodsBound counts the pinned pods the scheduler bound.
func pinnedPodsBound(t *testing.T, ns string) int {
	list, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=pinned"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// A taint write whose response is lost may have landed: the failed
// removal takes the taint off all the same, and when that fails too the
// loop tries again until it succeeds.
func TestScaleDownTakesOffATaintWhoseResponseWasLost(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "lt-")
	groups := "nodeGroups:\n- {name: lt-a, minSize: 0, maxSize: 5, initialSize: 1, zone: z, cpu: '4', memory: 16Gi}\n"
	preloadNodes(t, groups)
	nodes, err := groupNodes(t, context.Background(), "lt-a")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes of lt-a: %d, %v", len(nodes), err)
	}
	name := nodes[0].Name
	tr := faults.New(5,
		// The taint lands, its answer is lost...
		faults.Rule{Match: func(r *http.Request, body []byte) bool {
			_, taint := isTaintWrite(r, body, "lt-a-", scaledown.ToBeDeletedTaint)
			return taint
		}, Rate: 1, Kinds: []faults.Kind{faults.LostResponse}},
		// ...and every other write of the node fails.
		faults.Rule{Match: func(r *http.Request, body []byte) bool {
			_, ok := isTaintWrite(r, body, "lt-a-", "")
			return ok
		}, Rate: 1, Kinds: []faults.Kind{faults.Unavailable}})
	startTidalWith(t, tr, append(scaleDownFlags, "--scale-down-delay-after-failure=1h", "--local-node-groups="+writeGroups(t, groups))...)
	poll(t, 60*time.Second, "the removal of "+name+" failed", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, "default", "ScaleDownFailed")
		for _, e := range events {
			if e.InvolvedObject.Name == name {
				return true, nil
			}
		}
		return false, err
	})
	n, err := cluster(t).Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || !hasToBeDeleted(n) {
		t.Fatalf("the lost taint write did not land, or the node is gone (%v): the test did not set the scene", err)
	}
	tr.SetEnabled(false)
	poll(t, 30*time.Second, "the taint of the failed removal taken off", func(ctx context.Context) (bool, error) {
		n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && !hasToBeDeleted(n), err
	})
	t.Logf("faults: %s", tr)
}
