package testenv

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/tidal-autoscaler/tidal/localcluster"
)

// Applied is an object applied by Apply, and the client of its resource.
type Applied struct {
	Object   *unstructured.Unstructured
	Resource dynamic.ResourceInterface
}

// Apply applies an installation's objects to c with server-side apply, as
// `kubectl apply --server-side` or `helm install` would, with every
// Deployment at 0 replicas: the tests run tidal themselves.
func Apply(t *testing.T, c *localcluster.Cluster, fieldManager string, objs []*unstructured.Unstructured) []Applied {
	t.Helper()
	ctx := context.Background()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	var out []Applied
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "Deployment" {
			if err := unstructured.SetNestedField(o.Object, int64(0), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		// kustomize gives its namespace to kinds it does not know as
		// cluster-scoped (ValidatingAdmissionPolicy); kubectl, as here,
		// sends it only for namespaced ones.
		var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			res = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := res.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
		out = append(out, Applied{Object: o, Resource: res})
	}
	return out
}
