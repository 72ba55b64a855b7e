package externalgrpc_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

func plain(addr string) string { return "address: " + addr + "\n" }

func TestClientAgainstServer(t *testing.T) {
	cloud := newFakeCloud()
	addr, _ := serve(t, cloud, nil, "127.0.0.1:0")
	p := client(t, plain(addr))
	a := group(t, p, "a")
	if a.MinSize() != 1 || a.MaxSize() != 5 {
		t.Errorf("group a bounds %d..%d, want 1..5", a.MinSize(), a.MaxSize())
	}
	if err := a.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatalf("IncreaseSize: %v", err)
	}
	if size, err := a.TargetSize(); err != nil || size != 4 {
		t.Errorf("TargetSize = %d, %v; want 4", size, err)
	}
	if err := a.IncreaseSize(context.Background(), 9); err == nil || !strings.Contains(err.Error(), "NodeGroupIncreaseSize (node group a)") ||
		!strings.Contains(err.Error(), "would exceed max 5") {
		t.Errorf("IncreaseSize beyond max = %v, want an error naming the RPC, the group and the server's reason", err)
	}
	node := &corev1.Node{}
	node.Name, node.Spec.ProviderID, node.Labels = "n1", "fake://a-0", map[string]string{"group": "a"}
	if err := a.DeleteNodes(context.Background(), []*corev1.Node{node}); err != nil {
		t.Fatalf("DeleteNodes: %v", err)
	}
	if err := a.DecreaseTargetSize(context.Background(), -1); err != nil {
		t.Fatalf("DecreaseTargetSize: %v", err)
	}
	if got := cloud.groups[0]; got.size != 2 || !reflect.DeepEqual(got.deleted, []string{"n1=fake://a-0"}) {
		t.Errorf("server side: size %d, deleted %v; want 2 and [n1=fake://a-0]", got.size, got.deleted)
	}
	instances, err := a.Nodes()
	if err != nil || !reflect.DeepEqual(instances, cloud.groups[0].instances) {
		t.Errorf("Nodes = %+v, %v; want %+v", instances, err, cloud.groups[0].instances)
	}
	if g, err := p.NodeGroupForNode(node); err != nil || g == nil || g.Id() != "a" {
		t.Errorf("NodeGroupForNode(n1) = %v, %v; want group a", g, err)
	}
	stranger := &corev1.Node{}
	stranger.Name = "other"
	if g, err := p.NodeGroupForNode(stranger); err != nil || g != nil {
		t.Errorf("NodeGroupForNode(a node of no group) = %v, %v; want nil, nil", g, err)
	}
	_, _ = p.NodeGroupForNode(node)
	_, _ = p.NodeGroupForNode(stranger)
	if n := cloud.called("NodeGroupForNode"); n != 3 {
		t.Errorf("NodeGroupForNode reached the server %d times, want 3: a node of a group is kept, one of none asked again", n)
	}
	if label := p.GPULabel(); label != "fake/gpu" {
		t.Errorf("GPULabel = %q, want fake/gpu", label)
	}
}

func TestTemplateAndGroupsAreAskedOncePerRefresh(t *testing.T) {
	cloud := newFakeCloud()
	addr, _ := serve(t, cloud, nil, "127.0.0.1:0")
	p := client(t, plain(addr))
	b := group(t, p, "b")
	for range 3 {
		tmpl, err := b.TemplateNodeInfo(context.Background())
		if err != nil {
			t.Fatalf("TemplateNodeInfo: %v", err)
		}
		if tmpl.Node.Name != "template-b" || tmpl.Node.Status.Allocatable.Cpu().String() != "4" {
			t.Fatalf("template node %+v, want template-b with 4 CPUs", tmpl.Node)
		}
		tmpl.Node.Name = "changed by the caller"
		p.NodeGroups()
	}
	if n := cloud.called("NodeGroupTemplateNodeInfo"); n != 1 {
		t.Errorf("the server was asked for the template %d times in one iteration, want 1", n)
	}
	if n := cloud.called("NodeGroups"); n != 1 {
		t.Errorf("the server was asked for the groups %d times in one iteration, want 1", n)
	}
	b = group(t, p, "b")
	if _, err := b.TemplateNodeInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := cloud.called("NodeGroupTemplateNodeInfo"); n != 2 {
		t.Errorf("after a second Refresh the template was asked %d times in all, want 2", n)
	}
}

func TestUnimplementedOptionalMethods(t *testing.T) {
	addr, _ := serve(t, newFakeCloud(), nil, "127.0.0.1:0")
	p := client(t, plain(addr))
	a := group(t, p, "a")
	if _, err := a.TemplateNodeInfo(context.Background()); !errors.Is(err, cloudprovider.ErrNotImplemented) {
		t.Errorf("TemplateNodeInfo of a group without one = %v, want ErrNotImplemented", err)
	}
	if _, err := a.GetOptions(cloudprovider.NodeGroupAutoscalingOptions{}); !errors.Is(err, cloudprovider.ErrNotImplemented) {
		t.Errorf("GetOptions = %v, want ErrNotImplemented", err)
	}
	model, err := p.Pricing()
	if err != nil {
		t.Fatalf("Pricing: %v", err)
	}
	if _, err := model.NodePrice(&corev1.Node{}, time.Now(), time.Now().Add(time.Hour)); !errors.Is(err, cloudprovider.ErrNotImplemented) {
		t.Errorf("NodePrice = %v, want ErrNotImplemented", err)
	}
}

// unanswered is group a of a server that answers no call until the test
// ends, with the provider's grpc_timeout.
func unanswered(t *testing.T, timeout string) cloudprovider.NodeGroup {
	t.Helper()
	cloud := newFakeCloud()
	addr, _ := serve(t, cloud, nil, "127.0.0.1:0")
	p := client(t, plain(addr)+"grpc_timeout: "+timeout+"\n")
	a := group(t, p, "a")
	release := make(chan struct{})
	cloud.mu.Lock()
	cloud.block = release
	cloud.mu.Unlock()
	t.Cleanup(func() { close(release) })
	return a
}

func TestCallTimesOut(t *testing.T) {
	a := unanswered(t, "200ms")
	start := time.Now()
	size, err := a.TargetSize()
	if status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
		t.Fatalf("TargetSize against a server that does not answer = %d, %v; want DeadlineExceeded", size, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v with a 200ms timeout", took)
	}
}

// A call the server never answers ends with the caller's context (the
// node loop's iteration), long before the provider's own timeout.
func TestCallEndsWithTheCallersContext(t *testing.T) {
	a := unanswered(t, "10m")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := a.IncreaseSize(ctx, 1)
	if status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
		t.Fatalf("IncreaseSize against a server that does not answer = %v; want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the call took %v with a 200ms deadline", took)
	}
}

func TestClientReconnectsAfterServerRestart(t *testing.T) {
	cloud := newFakeCloud()
	addr, stop := serve(t, cloud, nil, "127.0.0.1:0")
	p := client(t, plain(addr))
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	stop()
	if err := p.Refresh(context.Background()); err == nil {
		t.Fatal("Refresh with the server stopped succeeded")
	}
	if groups := p.NodeGroups(); len(groups) != 0 {
		t.Errorf("after a failed Refresh the provider still has groups %v", groups)
	}
	serve(t, cloud, nil, addr)
	eventually(t, 30*time.Second, "Refresh after the server restarted", func() error { return p.Refresh(context.Background()) })
	if n := len(p.NodeGroups()); n != 2 {
		t.Errorf("after the restart the provider has %d groups, want 2", n)
	}
}
