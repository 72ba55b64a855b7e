// Package deploy holds tidal's installation: a kustomize base (base/, with
// the CRD from crd/), an AWS overlay (aws/) and a Helm chart (helm/tidal).
// Its Go code reads them the way kubectl and helm do, so that tests apply
// and compare exactly what users install.
package deploy

import (
	"fmt"
	"path/filepath"
	"runtime"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Dir is the directory of deploy/ in the source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Kustomize builds the kustomization in dir (what `kubectl apply -k dir`
// would apply) into objects.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Find returns the object of kind and name among objs, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
