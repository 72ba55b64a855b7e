package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
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
	return h(ctx, req)
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
	cloud, err := local.New(cluster.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cloud.Start(ctx); err != nil {
		t.Fatal(err)
	}
	calls := &templateCalls{calls: map[string]int{}}
	lb, err := server.StartLoopback(ctx, cloud, t.TempDir(), 5*time.Second, grpc.UnaryInterceptor(calls.intercept))
	if err != nil {
		t.Fatalf("serve the local cloud: %v", err)
	}
	startTidal(t, append(scaleDownFlags, "--cloud-provider=externalgrpc", "--cloud-config="+lb.CloudConfig)...)

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

	scaleDeployment(t, ns, "web", 0)
	scaleDeployment(t, ns, "batch", 0)
	poll(t, 45*time.Second, "eg-a back to its min size 1 and eg-zero to 0", func(ctx context.Context) (bool, error) {
		a, err := groupNodes(ctx, "eg-a")
		if err != nil {
			return false, err
		}
		zero, err := groupNodes(ctx, "eg-zero")
		return len(a) == 1 && len(zero) == 0, err
	})
	for _, g := range cloud.NodeGroups() {
		want := map[string]int{"eg-a": 1, "eg-zero": 0}[g.Id()]
		if size, err := g.TargetSize(); err != nil || size != want {
			t.Errorf("group %s target size %d (%v), want %d", g.Id(), size, err, want)
		}
	}
}
