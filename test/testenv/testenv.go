// Package testenv is what tidal's integration test packages share: pools
// of local clusters that tests lease, one cluster per test (Pool, Run),
// polling, namespaces and node clean-up, and tidal itself run in the test
// process with parsed flags.
//
// Every helper here is safe in a parallel test (t.Parallel()): namespaces
// get random names, node clean-up goes by the prefixes a test names, tidal
// gets a free address. What makes a test unfit to share a cluster is tidal
// itself, which reads every pod and node of the cluster: a test that runs
// tidal leases a cluster of its own (Pool.Lease).
package testenv

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
)

// Run runs a suite's tests on the clusters of its pools (NewPool), which
// start as tests lease them, and stops every cluster once the tests have
// run; after runs then. Use it from TestMain.
//
// Under -short (make test-fast) no cluster starts and no test of the
// package runs: every test of a package with this main needs a cluster.
// Under -test.list the tests are listed without a cluster.
func Run(m *testing.M, pools []*Pool, after ...func()) {
	flag.Parse()
	if testing.Short() {
		// m.Run with no test selected, not a bare exit: go test caches
		// the result, so a second test-fast does not link this binary.
		fmt.Println("skipped under -short: the tests of this package run against a local control plane (run them without -short)")
		_ = flag.Set("test.run", "^$")
	}
	parallelEnough(pools)
	code := m.Run()
	for _, p := range pools {
		p.Stop()
	}
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// parallelEnough raises go test's -parallel, unless given, from its
// default (GOMAXPROCS: 2 on a 2-core machine) to enough parallel tests to
// keep every cluster of the pools busy: most of a test's time is spent
// waiting on tidal's timers, not on a CPU. A parallel test past that
// waits for a cluster (Pool.Lease) without a CPU.
func parallelEnough(pools []*Pool) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	n := 0
	for _, p := range pools {
		n += p.size
	}
	if f := flag.Lookup("test.parallel"); !set && f != nil {
		_ = f.Value.Set(strconv.Itoa(max(2*n, runtime.GOMAXPROCS(0))))
	}
}

// Poll waits until cond holds, failing the test with msg after timeout.
func Poll(t testing.TB, timeout time.Duration, msg string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		// Each look has time of its own: one cut short by the deadline
		// would hide the last real answer behind the deadline's error.
		callCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ok, err := cond(callCtx)
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

// PollProgress waits until cond holds, failing the test with msg when cond's
// progress (a description of the state it waits on) has not changed for
// stall: work that a busy machine slows down but does not stop, such as a
// namespace's deletion, is waited for as long as it moves.
func PollProgress(t testing.TB, stall time.Duration, msg string, cond func(ctx context.Context) (done bool, progress string, err error)) {
	t.Helper()
	var lastErr error
	last, since := "", time.Now()
	for {
		callCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		done, progress, err := cond(callCtx)
		cancel()
		switch {
		case err != nil:
			lastErr = err
		case done:
			return
		case progress != last:
			last, since = progress, time.Now()
		}
		if time.Since(since) > stall {
			t.Fatalf("waiting for %s: nothing changed for %v (last seen: %s; last error: %v)", msg, stall, last, lastErr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// NewNamespace makes a namespace for one test and deletes it, with
// everything in it, when the test ends.
func NewNamespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	name := "t-" + rand.String(6)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
		// Its pods end through the simulated kubelet and the namespace
		// controller, which take minutes on a busy machine: the wait fails
		// only when the namespace and its pods stop changing.
		PollProgress(t, 3*time.Minute, "namespace "+name+" to be gone", func(ctx context.Context) (bool, string, error) {
			ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			if err != nil {
				return false, "", err
			}
			pods, err := cs.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			// The namespace's and its pods' own versions: the list's
			// would move with every write to the cluster.
			versions := make([]string, 0, len(pods.Items))
			for _, p := range pods.Items {
				versions = append(versions, p.Name+"@"+p.ResourceVersion)
			}
			sort.Strings(versions)
			return false, fmt.Sprintf("namespace@%s, %d pods %v", ns.ResourceVersion, len(pods.Items), versions), nil
		})
	})
	return name
}

// DeleteNodesOnCleanup removes, when the test ends, every node whose name
// starts with one of the prefixes.
func DeleteNodesOnCleanup(t testing.TB, cs kubernetes.Interface, prefixes ...string) {
	t.Cleanup(func() {
		ctx := context.Background()
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("list nodes: %v", err)
			return
		}
		for _, n := range nodes.Items {
			for _, p := range prefixes {
				if strings.HasPrefix(n.Name, p) {
					if err := cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
						t.Errorf("delete node %s: %v", n.Name, err)
					}
				}
			}
		}
	})
}

// GroupNodes lists the nodes of a local-cloud node group.
func GroupNodes(ctx context.Context, cs kubernetes.Interface, group string) ([]corev1.Node, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: local.NodeGroupLabel + "=" + group})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Tidal is a tidal run in the test process: app.Run with parsed flags.
type Tidal struct {
	cancel  context.CancelFunc
	done    chan error
	Address string
}

// StartTidal runs tidal against the cluster of kubeconfig with the given
// flags (plus --kubeconfig), serving /metrics and /healthz on a free port
// (Tidal.Address), in ctx (which may carry values such as a simulated
// metric source). It stops when the test ends.
// Its log is printed if the test fails: into the LogOnFailure logger ctx
// carries, or else into one of its own.
func StartTidal(ctx context.Context, t testing.TB, kubeconfig string, args ...string) *Tidal {
	t.Helper()
	return StartTidalWith(ctx, t, kubeconfig, nil, args...)
}

// StartTidalWith is StartTidal with options for Run, such as a fault
// injecting transport (app.WithTransport) or cloud (app.WithCloud).
func StartTidalWith(ctx context.Context, t testing.TB, kubeconfig string, options []app.Option, args ...string) *Tidal {
	t.Helper()
	return StartTidalOn(ctx, t, Listen(t), kubeconfig, options, args...)
}

// StartTidalOn is StartTidalWith serving /metrics and /healthz on l, which
// the caller opened (with Listen) to know the address before tidal runs.
// Run is handed the open listener, so no other process can take its port
// in between; an --address in args is ignored.
func StartTidalOn(ctx context.Context, t testing.TB, l net.Listener, kubeconfig string, options []app.Option, args ...string) *Tidal {
	t.Helper()
	addr := l.Addr().String()
	if !loggedOnFailure(ctx) {
		// Registered before the stop below, so printed after tidal stopped.
		ctx = logOnFailure(ctx, t, LogVerbosity, "log of tidal at "+addr)
	}
	opts := config.NewOptions()
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	opts.AddFlags(fs)
	all := append([]string{"--kubeconfig=" + kubeconfig}, args...)
	if err := fs.Parse(all); err != nil {
		t.Fatalf("flags %v: %v", all, err)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("flags %v: %v", all, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	tl := &Tidal{cancel: cancel, done: make(chan error, 1), Address: addr}
	options = append(slices.Clip(options), app.WithListener(l))
	go func() { tl.done <- app.Run(ctx, opts, options...) }()
	t.Cleanup(func() { _ = tl.Stop(t) })
	return tl
}

// Stop sends the equivalent of SIGTERM and waits for Run to return.
func (tl *Tidal) Stop(t testing.TB) error {
	t.Helper()
	tl.cancel()
	select {
	case err, ok := <-tl.done:
		if ok {
			close(tl.done)
		}
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("tidal did not stop within 30s of shutdown")
		return nil
	}
}

// Listen opens a listener on a free loopback port, closed when the test
// ends (if whoever it was handed to has not closed it before).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on a free port: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// FreeAddress is a loopback address that was free a moment ago. Another
// process may take it before it is used: hand a program a listener (Listen)
// where it can take one, or port 0 where it need not be reached.
func FreeAddress(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// WriteGroups writes a local-cloud node-group file and returns its path.
func WriteGroups(t testing.TB, yaml string) string {
	path := filepath.Join(t.TempDir(), "groups.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Deployment is a Deployment of pods labelled app=name requesting cpu and
// memory.
func Deployment(ns, name string, replicas int32, cpu, mem string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
					}}}}},
			},
		},
	}
}

// MetricValue reads one sample of tidal's /metrics at addr, 0 when absent.
func MetricValue(addr, sample string) (float64, error) { return app.MetricValue(addr, sample) }

// MetricSum adds up every sample of a metric of tidal's /metrics at addr.
func MetricSum(addr, name string) (float64, error) { return app.MetricSum(addr, name) }
