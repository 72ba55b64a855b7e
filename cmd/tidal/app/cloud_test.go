package app

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/config"
)

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// The local cloud starts only in a cluster whose nodes it created.
func TestLocalCloudGuard(t *testing.T) {
	own := node("general-a-1", local.ProviderIDPrefix+"general-a/general-a-1")
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		wantErr string
	}{
		{"empty cluster", nil, ""},
		{"only the local cloud's nodes", []*corev1.Node{own}, ""},
		{"a real node", []*corev1.Node{own, node("ip-10-0-0-1", "aws:///us-east-1a/i-0123")}, "1 node(s) the local cloud did not create (ip-10-0-0-1)"},
		{"a node without providerID", []*corev1.Node{node("kind-worker", "")}, "(kind-worker)"},
		{"many", []*corev1.Node{node("a", ""), node("b", ""), node("c", ""), node("d", "")}, "4 node(s) the local cloud did not create (a, b, c, ...)"},
	}
	for _, tc := range tests {
		client := fake.NewClientset()
		for _, n := range tc.nodes {
			if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		err := checkLocalCloudCluster(context.Background(), client)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

// --kubernetes overrides the API server address, and the user agent is
// --user-agent with tidal's version, not Kubernetes'.
func TestRestConfigTakesKubernetesAndUserAgent(t *testing.T) {
	s, _, err := executeUntilStart("--cloud-provider=aws", "--nodes=1:3:a", "--kubernetes=https://10.0.0.1:6443", "--user-agent=my-agent")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := restConfig(s.opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" {
		t.Errorf("host %q, want --kubernetes's", cfg.Host)
	}
	if want := userAgent("my-agent"); cfg.UserAgent != want || !strings.HasPrefix(want, "my-agent/") || strings.Contains(want, "v1.36") {
		t.Errorf("user agent %q (want %q), want my-agent/<tidal's version>", cfg.UserAgent, want)
	}
	for _, bad := range []string{"--kubernetes=10.0.0.1:6443", "--user-agent="} {
		if _, _, err := executeUntilStart("--cloud-provider=aws", "--nodes=1:3:a", bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: error %v, want one naming the flag", bad, err)
		}
	}
}

// The guard is in the path that builds the local cloud, before the cloud
// makes a client or a Node, and only when asked for (tidal, not tidal
// local or the tests' Run).
func TestBuildLocalCloudRefusesAForeignCluster(t *testing.T) {
	client := fake.NewClientset(node("ip-10-0-0-1", "aws:///us-east-1a/i-0123"))
	opts := config.NewOptions()
	opts.CloudProvider = config.CloudProviderLocal
	env := &loopEnv{opts: opts, client: client, seams: seams{localCloudGuard: true}}
	_, err := buildCloudProvider(context.Background(), env, opts)
	if err == nil || !strings.Contains(err.Error(), "did not create (ip-10-0-0-1)") {
		t.Fatalf("error %v, want the foreign node named", err)
	}
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if len(nodes.Items) != 1 {
		t.Fatalf("%d nodes after the refusal, want the cluster untouched", len(nodes.Items))
	}
	var s seams
	withLocalCloudGuard()(&s)
	if !s.localCloudGuard {
		t.Fatal("withLocalCloudGuard does not set the guard")
	}
}
