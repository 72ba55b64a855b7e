package explain

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider/snapshot"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app/nodeopts"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
)

func loadFixture(t *testing.T) *Snapshot {
	t.Helper()
	f, err := os.Open("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Load(f)
	if err != nil {
		t.Fatalf("load testdata/cluster.yaml: %v", err)
	}
	return s
}

func plainFactory(c kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactory(c, 0)
}

// fixtureDecisions runs the node loop once over testdata/cluster.yaml with
// tidal's default flags.
func fixtureDecisions(t *testing.T) *core.Decisions {
	t.Helper()
	src, err := FileSource(loadFixture(t), snapshot.Config{}, plainFactory)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decide(context.Background(), src, nodeopts.FromConfig(config.NewOptions()))
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return d
}

func TestLoadKubectlList(t *testing.T) {
	s := loadFixture(t)
	if len(s.Nodes) != 5 {
		t.Errorf("%d nodes, want 5", len(s.Nodes))
	}
	if got := s.SkippedNote(); !strings.Contains(got, "cert-manager.io/v1 Certificate (1)") {
		t.Errorf("skipped note %q, want the Certificate named", got)
	}
	if len(s.Objects) != 26 {
		t.Errorf("%d objects, want 26 (every item but the Certificate)", len(s.Objects))
	}
}
