package deploy

import (
	"os"
	"path/filepath"
	"testing"
)

// `kubectl apply -f deploy/crd/` reads every .json, .yaml and .yml file of
// the directory and applies each document as an object of the cluster: each
// must be a CustomResourceDefinition (a kustomization.yaml there fails the
// whole apply: the cluster knows no kind Kustomization).
func TestCRDDirectoryAppliesWithKubectlF(t *testing.T) {
	dir := filepath.Join(Dir(), "crd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var crds int
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".json", ".yaml", ".yml":
		default:
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeYAML(e.Name(), data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" || o.GetAPIVersion() != "apiextensions.k8s.io/v1" {
				t.Errorf("kubectl apply -f deploy/crd/ would apply %s: %s %s, not a CRD", e.Name(), o.GetAPIVersion(), o.GetKind())
			}
			crds++
		}
	}
	if crds != 1 {
		t.Errorf("kubectl apply -f deploy/crd/ applies %d CRDs, want 1", crds)
	}
	objs, err := Kustomize(dir)
	if err != nil || len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		t.Errorf("kubectl apply -k deploy/crd builds %d objects (%v), want the CRD", len(objs), err)
	}
}
