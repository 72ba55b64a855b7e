package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
)

// explainOptions are tidal's options for the flags, as tidal parses them.
func explainOptions(t *testing.T, args ...string) *config.Options {
	t.Helper()
	opts := config.NewOptions()
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(append([]string{"--kubeconfig=" + cluster(t).KubeconfigPath}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	return opts
}

// explainLive runs `tidal explain` in process against the cluster and
// returns its answer.
func explainLive(t *testing.T, opts *config.Options, req app.ExplainRequest) string {
	t.Helper()
	var out bytes.Buffer
	if err := app.Explain(context.Background(), opts, req, &out); err != nil {
		t.Fatalf("explain %s %s: %v", req.Kind, req.Name, err)
	}
	return out.String()
}

// explain says what the loop will do before it runs, and writes nothing;
// then the loop does it: the same group grows by the same number of nodes,
// the node a PDB keeps stays and the unneeded one goes.
func TestExplainThenTheLoopDoesIt(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "ex-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: ex-s, minSize: 0, maxSize: 5, initialSize: 2, zone: z, cpu: '2', memory: 8Gi}\n" +
		"- {name: ex-b, minSize: 0, maxSize: 5, initialSize: 0, zone: z, cpu: '8', memory: 32Gi}\n"
	preloadNodes(t, groups)
	createDeployment(t, deployment(ns, "guarded", 1, "500m", "512Mi"))
	createPDB(t, minAvailablePDB(ns, "guarded", 1))
	blocked := waitRunning(t, ns, "guarded", 1, 30*time.Second)[0].Spec.NodeName
	createDeployment(t, deployment(ns, "big", 2, "3", "4Gi"))
	waitUnschedulable(t, ns, "big", 2)
	flags := append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups))
	opts := explainOptions(t, flags...)

	var d core.Decisions
	if err := json.Unmarshal([]byte(explainLive(t, opts, app.ExplainRequest{Output: "json"})), &d); err != nil {
		t.Fatalf("explain -o json: %v", err)
	}
	if len(d.ScaleUp.ScaleUps) != 1 || d.ScaleUp.ScaleUps[0].NodeGroup != "ex-b" || d.ScaleUp.ScaleUps[0].Nodes != 1 {
		t.Fatalf("explain's scale-ups %+v, want ex-b +1 node", d.ScaleUp.ScaleUps)
	}
	if why := d.ScaleUp.ScaleUps[0].Rejected["ex-s"]; !slices.ContainsFunc(why, func(r string) bool { return strings.HasPrefix(r, "Insufficient cpu (needs ") }) {
		t.Errorf("why not ex-s: %v, want Insufficient cpu with the numbers", why)
	}
	var free string
	for _, u := range d.ScaleDown.Unneeded {
		free = u.Node
	}
	if free == "" || free == blocked {
		t.Fatalf("explain's unneeded nodes %+v, want the ex-s node without the guarded pod (that one is %s)", d.ScaleDown.Unneeded, blocked)
	}
	answer := explainLive(t, opts, app.ExplainRequest{Kind: "node", Name: blocked, Output: "text"})
	if !strings.Contains(answer, "cannot be removed") || !strings.Contains(answer, "NotEnoughPdb") {
		t.Errorf("explain node %s: %q, want it kept by the PDB", blocked, answer)
	}
	pod := explainLive(t, opts, app.ExplainRequest{Kind: "pod", Name: d.ScaleUp.ScaleUps[0].Pods[0], Output: "text"})
	t.Logf("explain pod: %s", pod)
	assertExplainWroteNothing(t, free)

	startTidal(t, flags...)
	poll(t, 60*time.Second, "ex-b grown by 1 node and the unneeded ex-s node gone", func(ctx context.Context) (bool, error) {
		big, err := groupNodes(t, ctx, "ex-b")
		if err != nil {
			return false, err
		}
		small, err := groupNodes(t, ctx, "ex-s")
		return len(big) == 1 && len(small) == 1 && small[0].Name == blocked, err
	})
	waitRunning(t, ns, "big", 2, 30*time.Second)
	if big, _ := groupNodes(t, context.Background(), "ex-b"); len(big) != 1 {
		t.Fatalf("ex-b has %d nodes, explain said 1", len(big))
	}
}

// assertExplainWroteNothing checks the cluster as explain left it: no node
// added, and no soft taint on the node it found unneeded.
func assertExplainWroteNothing(t *testing.T, unneeded string) {
	t.Helper()
	ctx := context.Background()
	if big, err := groupNodes(t, ctx, "ex-b"); err != nil || len(big) != 0 {
		t.Fatalf("after explain ex-b has %d nodes (%v), want none", len(big), err)
	}
	n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, unneeded, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key != "" }) {
		t.Fatalf("explain left taints %v on %s", n.Spec.Taints, unneeded)
	}
}
