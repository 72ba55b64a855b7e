package testenv

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/localcluster"
)

// Object names one object of a resource the sweep looks after, by the
// resource's plural name ("namespaces", "apiservices", ...).
type Object struct {
	Resource, Namespace, Name string
}

func (o Object) key() objectKey { return objectKey(o) }

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Resource + " " + o.Name
	}
	return o.Resource + " " + o.Namespace + "/" + o.Name
}

type objectKey = Object

// swept are the resources a test may leave objects of that another test on
// the same cluster would see: whatever is cluster-wide, and what tidal and
// the tests write in kube-system. The objects of a test's namespaces go
// with the namespaces. Phases run in order: namespaces first (their pods
// need their nodes to end), nodes last.
var swept = [][]sweptResource{
	{{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}},
	{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, ns: "kube-system", skip: isDefaultServiceAccount},
		{gvr: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, ns: "kube-system"},
		{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}},
		{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}},
		{gvr: schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}},
		{gvr: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}},
		{gvr: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}},
		{gvr: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}},
		{gvr: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}},
		{gvr: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}},
		{gvr: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, skip: isLocalAPIService},
	},
	{{gvr: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}}},
}

type sweptResource struct {
	gvr schema.GroupVersionResource
	ns  string // "" for cluster-wide resources
	// skip tells objects the cluster itself makes at any time.
	skip func(*unstructured.Unstructured) bool
}

// The ServiceAccount controller gives every namespace its "default".
func isDefaultServiceAccount(o *unstructured.Unstructured) bool { return o.GetName() == "default" }

// The API server registers its own groups (no service) as it serves them.
func isLocalAPIService(o *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedMap(o.Object, "spec", "service")
	return !found
}

// snapshot lists the objects the sweep looks after.
func snapshot(ctx context.Context, c *localcluster.Cluster) (map[objectKey]bool, error) {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	all := map[objectKey]bool{}
	for _, phase := range swept {
		for _, r := range phase {
			objs, err := listSwept(ctx, dyn, r)
			if err != nil {
				return nil, err
			}
			for o := range objs {
				all[o] = true
			}
		}
	}
	return all, nil
}

func listSwept(ctx context.Context, dyn dynamic.Interface, r sweptResource) (map[objectKey]*unstructured.Unstructured, error) {
	list, err := dyn.Resource(r.gvr).Namespace(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", r.gvr.Resource, err)
	}
	out := map[objectKey]*unstructured.Unstructured{}
	for i := range list.Items {
		o := &list.Items[i]
		if r.skip == nil || !r.skip(o) {
			out[Object{Resource: r.gvr.Resource, Namespace: o.GetNamespace(), Name: o.GetName()}] = o
		}
	}
	return out, nil
}

// sweep brings a cluster back to its baseline once a test has returned it:
// it deletes the events of kube-system and default (tidal's events name
// node groups that the next test may name too), deletes every object of the
// swept resources that is not in the baseline, waits until they are gone,
// and tells what still differs from the baseline.
func sweep(c *localcluster.Cluster, baseline map[objectKey]bool) error {
	// A backstop only: a phase fails when what is left stops changing for
	// sweepStall (sweepPhase), however busy the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	events := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	for _, ns := range []string{"kube-system", "default"} {
		if err := dyn.Resource(events).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("delete the events of %s: %w", ns, err)
		}
	}
	for _, phase := range swept {
		if err := sweepPhase(ctx, dyn, phase, baseline); err != nil {
			return err
		}
	}
	return compare(ctx, c, baseline)
}

// sweepStall is how long what a sweep waits for may stay unchanged before
// the cluster counts as stuck.
const sweepStall = 3 * time.Minute

// sweepPhase deletes the objects of the phase's resources that are not in
// the baseline and waits until they are gone, as long as they keep
// changing (an object going, or one being deleted being updated): a busy
// machine slows their end down without stopping it.
func sweepPhase(ctx context.Context, dyn dynamic.Interface, phase []sweptResource, baseline map[objectKey]bool) error {
	var left []string
	progress, since := "", time.Now()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left = nil
		var versions []string
		for _, r := range phase {
			objs, err := listSwept(ctx, dyn, r)
			if err != nil {
				return false, err
			}
			for o, obj := range objs {
				if baseline[o] {
					continue
				}
				left = append(left, o.String())
				versions = append(versions, o.String()+"@"+obj.GetResourceVersion())
				if obj.GetDeletionTimestamp() != nil {
					continue
				}
				// Grace 0: a pod in kube-system ends now, as its node may be gone.
				err := dyn.Resource(r.gvr).Namespace(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				if err != nil && !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("delete %s: %w", o, err)
				}
			}
		}
		if len(left) == 0 {
			return true, nil
		}
		sort.Strings(versions)
		if now := strings.Join(versions, ","); now != progress {
			progress, since = now, time.Now()
		}
		if time.Since(since) > sweepStall {
			return false, fmt.Errorf("nothing changed for %v", sweepStall)
		}
		return false, nil
	})
	if err != nil {
		sort.Strings(left)
		return fmt.Errorf("%w; still there: %s", err, strings.Join(left, ", "))
	}
	return nil
}

// compare tells the objects that differ from the baseline: left behind or
// missing.
func compare(ctx context.Context, c *localcluster.Cluster, baseline map[objectKey]bool) error {
	now, err := snapshot(ctx, c)
	if err != nil {
		return err
	}
	var diff []string
	for o := range now {
		if !baseline[o] {
			diff = append(diff, "left: "+o.String())
		}
	}
	for o := range baseline {
		if !now[o] {
			diff = append(diff, "missing: "+o.String())
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		return fmt.Errorf("differs from the cluster's first state: %s", strings.Join(diff, ", "))
	}
	return nil
}
