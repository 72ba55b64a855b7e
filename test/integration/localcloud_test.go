package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

func cloudConfig(name string, min, max int, delay time.Duration) *local.Config {
	return &local.Config{NodeGroups: []local.GroupSpec{{
		Name: name, MinSize: min, MaxSize: max, Zone: "zone-x", InstanceType: "test-2",
		CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), PricePerHour: ptr.To(0.1),
		ProvisioningDelay: local.Duration{Duration: delay},
	}}}
}

func startCloud(t *testing.T, cfg *local.Config) (*local.Cloud, cloudprovider.NodeGroup) {
	t.Helper()
	ctx, cancel := context.WithCancel(testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity))
	t.Cleanup(cancel)
	c, err := local.New(cluster(t).Client, cfg)
	if err != nil {
		t.Fatalf("new cloud: %v", err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start cloud: %v", err)
	}
	return c, c.NodeGroups()[0]
}

func TestLocalCloudGrowsAndShrinks(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "lcg-")
	cloud, g := startCloud(t, cloudConfig("lcg", 1, 3, 300*time.Millisecond))
	poll(t, 10*time.Second, "the min-size node to exist", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "lcg")
		return len(nodes) == 1, err
	})
	if err := g.IncreaseSize(context.Background(), 3); err == nil || !strings.Contains(err.Error(), "exceed max size 3") {
		t.Fatalf("increase beyond max: got %v", err)
	}
	requested := time.Now()
	if err := g.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatalf("increase: %v", err)
	}
	if size, _ := g.TargetSize(); size != 3 {
		t.Fatalf("target size %d after increase, want 3", size)
	}
	instances, _ := g.Nodes()
	creating := 0
	for _, in := range instances {
		if in.Status.State == cloudprovider.InstanceCreating {
			creating++
		}
	}
	if creating != 2 {
		t.Fatalf("%d instances creating right after the request, want 2: %+v", creating, instances)
	}
	poll(t, 10*time.Second, "3 Ready nodes", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "lcg")
		ready := 0
		for i := range nodes {
			if isReady(&nodes[i]) {
				ready++
			}
		}
		return ready == 3, err
	})
	if elapsed := time.Since(requested); elapsed < 300*time.Millisecond {
		t.Fatalf("nodes appeared after %v, before the 300ms provisioning delay", elapsed)
	}
	nodes, _ := groupNodes(t, context.Background(), "lcg")
	ng, err := cloud.NodeGroupForNode(&nodes[0])
	if err != nil || ng == nil || ng.Id() != "lcg" {
		t.Fatalf("NodeGroupForNode(%s) = %v, %v", nodes[0].Name, ng, err)
	}
	if err := g.DeleteNodes(context.Background(), []*corev1.Node{&nodes[0], &nodes[1], &nodes[2]}); err == nil || !strings.Contains(err.Error(), "below min size 1") {
		t.Fatalf("deleting every node of a min-1 group: got %v", err)
	}
	if err := g.DeleteNodes(context.Background(), []*corev1.Node{&nodes[0]}); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	poll(t, 10*time.Second, "2 nodes left", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "lcg")
		return len(nodes) == 2, err
	})
	if size, _ := g.TargetSize(); size != 2 {
		t.Fatalf("target size %d after delete, want 2", size)
	}
}

func TestLocalCloudFaultsSurfaceAsInstanceErrors(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "lcf-")
	cloud, g := startCloud(t, cloudConfig("lcf", 0, 5, 100*time.Millisecond))
	failed := func() int {
		instances, err := g.Nodes()
		if err != nil {
			t.Errorf("list instances: %v", err)
		}
		n := 0
		for _, in := range instances {
			if e := in.Status.ErrorInfo; e != nil && e.ErrorClass == cloudprovider.OutOfResourcesErrorClass {
				n++
			}
		}
		return n
	}
	// The cloud tells of failed launches as they happen; by then the
	// instances report them.
	told := make(chan string, 10)
	cloud.NotifyInstanceErrors(func(group string) { told <- fmt.Sprintf("%s with %d failed", group, failed()) })
	if err := cloud.SetFault("lcf", local.FaultOutOfCapacity); err != nil {
		t.Fatalf("set fault: %v", err)
	}
	if err := g.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatalf("increase: %v", err)
	}
	select {
	case got := <-told:
		if got != "lcf with 2 failed" {
			t.Fatalf("the cloud told %q, want lcf with its 2 failed instances", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cloud did not tell of the failed launches")
	}
	if n := failed(); n != 2 {
		t.Fatalf("%d instances report out-of-capacity, want 2", n)
	}
	if nodes, _ := groupNodes(t, context.Background(), "lcf"); len(nodes) != 0 {
		t.Fatalf("%d nodes created despite the capacity fault", len(nodes))
	}
	if err := g.DecreaseTargetSize(context.Background(), -2); err != nil {
		t.Fatalf("cancel failed instances: %v", err)
	}
	if size, _ := g.TargetSize(); size != 0 {
		t.Fatalf("target %d after cancelling, want 0", size)
	}
	if err := cloud.SetFault("lcf", local.FaultAPIError); err != nil {
		t.Fatalf("set fault: %v", err)
	}
	if err := g.IncreaseSize(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("increase under api-error fault: got %v", err)
	}
	if err := cloud.SetFault("lcf", local.NoFault); err != nil {
		t.Fatalf("clear fault: %v", err)
	}
	if err := g.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatalf("increase after clearing the fault: %v", err)
	}
	poll(t, 10*time.Second, "a node once the fault is cleared", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "lcf")
		return len(nodes) == 1, err
	})
	if err := g.DecreaseTargetSize(context.Background(), -1); err == nil {
		t.Fatal("DecreaseTargetSize removed a registered node")
	}
}

func TestLocalCloudAdoptsExistingNodesAfterRestart(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "lca-")
	first, g := startCloud(t, cloudConfig("lca", 0, 5, 0))
	if err := g.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatalf("increase: %v", err)
	}
	poll(t, 10*time.Second, "2 nodes", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "lca")
		return len(nodes) == 2, err
	})
	_ = first
	// A second cloud, as after a tidal restart, finds the machines.
	_, g2 := startCloud(t, cloudConfig("lca", 0, 5, 0))
	if size, _ := g2.TargetSize(); size != 2 {
		t.Fatalf("restarted cloud sees target %d, want 2", size)
	}
	if err := g2.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatalf("increase: %v", err)
	}
	poll(t, 10*time.Second, "a third node with a fresh name", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "lca")
		if err != nil || len(nodes) != 3 {
			return false, err
		}
		names := map[string]bool{}
		for _, n := range nodes {
			names[n.Name] = true
		}
		return names["lca-00002"], nil
	})
}
