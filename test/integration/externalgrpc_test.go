package integration

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/server"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// templateCalls counts the NodeGroupTemplateNodeInfo calls the server
// answers, by node group.
type templateCalls struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *templateCalls) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*protos.NodeGroupTemplateNodeInfoRequest); ok {
		c.mu.Lock()
		c.calls[r.GetId()]++
		c.mu.Unlock()
	}
	resp, err := h(ctx, req)
	if _, ok := req.(*protos.NodeGroupAutoscalingOptionsRequest); ok && status.Code(err) == codes.Unimplemented {
		c.mu.Lock()
		c.calls["unimplemented options"]++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *templateCalls) of(group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[group]
}

// inGroup keeps a Deployment's pods on a local-cloud group's nodes.
func inGroup(d *appsv1.Deployment, group string) *appsv1.Deployment {
	d.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: group}
	return d
}

// tidal reaches the local cloud only through a server of Cluster
// Autoscaler's externalgrpc protocol, over mutual TLS: it grows a group
// with a node, grows a group of none from the template the server sends,
// and shrinks both back once their pods are gone.
func TestExternalGRPCScalesUpFromZeroAndDown(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "eg-")
	ns := newNamespace(t)
	cfg, err := local.ParseConfig([]byte(`nodeGroups:
- {name: eg-a, minSize: 1, maxSize: 4, initialSize: 1, zone: z, cpu: '2', memory: 4Gi, provisioningDelay: 200ms}
- {name: eg-zero, minSize: 0, maxSize: 2, zone: z, cpu: '2', memory: 4Gi, provisioningDelay: 200ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity))
	t.Cleanup(cancel)
	cloud, err := local.New(cluster(t).Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cloud.Start(ctx); err != nil {
		t.Fatal(err)
	}
	calls := &templateCalls{calls: map[string]int{}}
	serverCtx, stopServer := context.WithCancel(ctx)
	lb, err := server.StartLoopback(serverCtx, cloud, t.TempDir(), 5*time.Second, grpc.UnaryInterceptor(calls.intercept))
	if err != nil {
		t.Fatalf("serve the local cloud: %v", err)
	}
	tl := startTidal(t, append(scaleDownFlags, "--cloud-provider=externalgrpc", "--cloud-config="+lb.CloudConfig)...)

	// Pods of 1.5 CPU: one per 2-CPU node.
	createDeployment(t, inGroup(deployment(ns, "web", 2, "1500m", "1Gi"), "eg-a"))
	createDeployment(t, inGroup(deployment(ns, "batch", 2, "1500m", "1Gi"), "eg-zero"))
	waitRunning(t, ns, "web", 2, 45*time.Second)
	waitRunning(t, ns, "batch", 2, 45*time.Second)
	if a, zero := nodeCount(t, "eg-a"), nodeCount(t, "eg-zero"); a != 2 || zero != 2 {
		t.Fatalf("groups have %d and %d nodes, want 2 and 2 (one per pod)", a, zero)
	}
	if n := calls.of("eg-zero"); n == 0 {
		t.Fatal("eg-zero grew from no node without the server being asked for its template")
	}

	// The server goes away while the pods do: iterations fail, and no node
	// is removed on what tidal could not read.
	stopServer()
	if err := lb.Wait(); err != nil {
		t.Fatalf("server stopped with %v", err)
	}
	errorsBefore, _ := testenv.MetricSum(tl.Address, "tidal_errors_total")
	scaleDeployment(t, ns, "web", 0)
	scaleDeployment(t, ns, "batch", 0)
	waitIterations(t, tl, 4) // past --scale-down-unneeded-time=2s
	if errs, _ := testenv.MetricSum(tl.Address, "tidal_errors_total"); errs < errorsBefore+3 {
		t.Errorf("tidal_errors_total went from %v to %v while the server was down, want the failed iterations counted", errorsBefore, errs)
	}
	if a, zero := nodeCount(t, "eg-a"), nodeCount(t, "eg-zero"); a != 2 || zero != 2 {
		t.Fatalf("while the server was down the groups went to %d and %d nodes, want 2 and 2 kept", a, zero)
	}

	// The server comes back on the same address: tidal reconnects and
	// shrinks the groups; the options it asks for are Unimplemented by
	// the local cloud, and the defaults apply, as with Cluster Autoscaler.
	restartLoopback(t, ctx, lb, cloud, grpc.UnaryInterceptor(calls.intercept))
	// The local cloud deletes a Node object before it forgets the machine,
	// so the test's watch can see the node gone a moment before the
	// group's target size drops: both are waited for.
	want := map[string]int{"eg-a": 1, "eg-zero": 0}
	poll(t, 60*time.Second, "eg-a back to its min size 1 and eg-zero to 0, in nodes and target sizes", func(ctx context.Context) (bool, error) {
		for _, g := range cloud.NodeGroups() {
			nodes, err := groupNodes(t, ctx, g.Id())
			if err != nil {
				return false, err
			}
			size, err := g.TargetSize()
			if err != nil {
				return false, err
			}
			if len(nodes) != want[g.Id()] || size != want[g.Id()] {
				return false, fmt.Errorf("group %s has %d node(s) and target size %d, want %d", g.Id(), len(nodes), size, want[g.Id()])
			}
		}
		return true, nil
	})
	if calls.of("unimplemented options") == 0 {
		t.Error("no NodeGroupGetOptions call was answered Unimplemented: the defaults were not exercised")
	}
}

// restartLoopback serves cloud again on lb's address with its certificates
// until the test ends.
func restartLoopback(t *testing.T, ctx context.Context, lb *server.Loopback, cloud *local.Cloud, opts ...grpc.ServerOption) {
	t.Helper()
	tlsCfg, err := server.TLSConfig(lb.Files.ServerCert, lb.Files.ServerKey, lb.Files.CACert)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", lb.Address)
	if err != nil {
		t.Fatalf("listen again on %s: %v", lb.Address, err)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, lis, cloud, tlsCfg, opts...) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("restarted server: %v", err)
		}
	})
}
