package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

func TestScaleUpEndToEnd(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	deleteNodesOnCleanup(t, "e2e-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: e2e-a, minSize: 1, maxSize: 6, zone: zone-a, instanceType: t-4, cpu: "4", memory: 16Gi, provisioningDelay: 500ms}
`)
	startTidal(t, "--local-node-groups="+groups, "--scan-interval=1s", "--leader-elect=false")
	poll(t, 20*time.Second, "the group's first node Ready", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "e2e-a")
		return len(nodes) == 1 && isReady(&nodes[0]), err
	})

	// 10 pods of 1.5 CPU: 2 per 4-CPU node, so 5 nodes in all.
	if _, err := cluster(t).Client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", 10, "1500m", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	poll(t, 60*time.Second, "all 10 pods Running", func(ctx context.Context) (bool, error) {
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 10, nil
	})
	nodes, err := groupNodes(t, ctx, "e2e-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 5 {
		t.Fatalf("group has %d nodes, want exactly 5 for 10 pods of 1.5 CPU on 4-CPU nodes", len(nodes))
	}
	events, err := cluster(t).Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", "TriggeredScaleUp").String(),
	})
	if err != nil || len(events.Items) == 0 {
		t.Fatalf("no TriggeredScaleUp events on the pods (err %v)", err)
	}
	// One decision, or more when the ReplicaSet's waves of pods straddle
	// an iteration: together they take the group from 1 to 5 nodes.
	format := regexp.MustCompile(`^pod triggered scale-up: \[\{e2e-a (\d+)->(\d+) \(max: 6\)\}\]$`)
	from, to := 6, 0
	for _, e := range events.Items {
		m := format.FindStringSubmatch(e.Message)
		if m == nil {
			t.Fatalf("event message %q does not name the group and its sizes", e.Message)
		}
		f, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		from, to = min(from, f), max(to, n)
	}
	if from != 1 || to != 5 {
		t.Fatalf("the events' scale-ups span %d->%d, want 1->5", from, to)
	}
}

func TestHealthzAndMetrics(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "hm-")
	groups := writeGroups(t, "nodeGroups:\n- {name: hm-a, minSize: 0, maxSize: 2, zone: z, cpu: '2', memory: 4Gi}\n")
	tl := startTidal(t, "--local-node-groups="+groups, "--scan-interval=1s", "--leader-elect=false")
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + tl.Address + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	poll(t, 10*time.Second, "/healthz ok", func(context.Context) (bool, error) {
		code, body, err := get("/healthz")
		return code == 200 && strings.TrimSpace(body) == "ok", err
	})
	poll(t, 10*time.Second, "node-loop metrics on /metrics", func(context.Context) (bool, error) {
		code, body, err := get("/metrics")
		return code == 200 && strings.Contains(body, `tidal_function_duration_seconds_count{function="main"}`) &&
			strings.Contains(body, `tidal_node_group_size{kind="target",node_group="hm-a"} 0`), err
	})
}

func TestLeaderElectionAndGracefulShutdown(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	deleteNodesOnCleanup(t, "le-")
	groups := writeGroups(t, "nodeGroups:\n- {name: le-a, minSize: 1, maxSize: 2, zone: z, cpu: '2', memory: 4Gi}\n")
	lease := "tidal-le-" + strings.ToLower(t.Name()[len(t.Name())-5:])
	flags := []string{"--local-node-groups=" + groups, "--scan-interval=1s", "--leader-elect-resource-name=" + lease,
		"--leader-elect-lease-duration=1h", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=200ms"}
	first := startTidal(t, flags...)
	holder := func(ctx context.Context) (string, error) {
		l, err := cluster(t).Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return ptr.Deref(l.Spec.HolderIdentity, ""), nil
	}
	var firstID string
	poll(t, 15*time.Second, "the first replica to take the lease", func(ctx context.Context) (bool, error) {
		id, err := holder(ctx)
		firstID = id
		return id != "", err
	})
	poll(t, 15*time.Second, "the leader's cloud to bring le-a to its min size", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "le-a")
		return len(nodes) == 1, err
	})
	second := startTidal(t, flags...)
	time.Sleep(2 * time.Second)
	if id, _ := holder(ctx); id != firstID {
		t.Fatalf("lease moved to %q while the first replica %q was alive", id, firstID)
	}

	// SIGTERM the leader: Run returns and the lease is released, so the
	// standby takes over at its next try, not when the lease would have
	// expired (in an hour). How fast: BenchmarkLeaderHandover.
	if err := first.Stop(t); err != nil {
		t.Fatalf("leader's Run returned %v on shutdown, want nil", err)
	}
	poll(t, 30*time.Second, "the standby to take the released lease", func(ctx context.Context) (bool, error) {
		id, err := holder(ctx)
		return id != "" && id != firstID, err
	})
	if err := second.Stop(t); err != nil {
		t.Fatalf("second Run returned %v", err)
	}
	if id, _ := holder(ctx); id != "" {
		t.Fatalf("lease still held by %q after both replicas stopped", id)
	}
	if nodes, _ := groupNodes(t, ctx, "le-a"); len(nodes) != 1 {
		t.Fatalf("le-a has %d nodes after the handover, want 1 (no duplicate machines)", len(nodes))
	}
	_ = fmt.Sprint()
}
