package deploy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// grantsPodPatch tells whether the ClusterRole name among objs lets patch
// pods.
func grantsPodPatch(t *testing.T, objs []*unstructured.Unstructured, name string) bool {
	t.Helper()
	role := Find(objs, "ClusterRole", name)
	if role == nil {
		t.Fatalf("no ClusterRole %s", name)
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		m := r.(map[string]any)
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		if strings.Contains(","+strings.Join(resources, ",")+",", ",pods,") && strings.Contains(","+strings.Join(verbs, ",")+",", ",patch,") {
			return true
		}
	}
	return false
}

// matchedUser is the user name the policy's match condition names.
func matchedUser(t *testing.T, policy *unstructured.Unstructured) string {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
	if len(conds) != 1 {
		t.Fatalf("policy %s: match conditions %v, want one naming tidal's ServiceAccount", policy.GetName(), conds)
	}
	expr := conds[0].(map[string]any)["expression"].(string)
	_, user, ok := strings.Cut(expr, "request.userInfo.username == '")
	if !ok {
		t.Fatalf("policy %s: match condition %q", policy.GetName(), expr)
	}
	return strings.TrimSuffix(user, "'")
}

// Pod patch is granted exactly when tidal sets pod-deletion-cost, and then
// always with the policy that confines it, for the ServiceAccount that runs
// tidal: in the base, and in the chart, whose policy is the base's but for
// the ServiceAccount's name.
func TestPodPatchOnlyWithItsPolicy(t *testing.T) {
	base := kustomize(t, "base")
	policy, binding := Find(base, "ValidatingAdmissionPolicy", "tidal-pod-writes"), Find(base, "ValidatingAdmissionPolicyBinding", "tidal-pod-writes")
	if policy == nil || binding == nil || !grantsPodPatch(t, base, "tidal") {
		t.Fatal("the base grants pods patch without the policy tidal-pod-writes and its binding")
	}
	if u := matchedUser(t, policy); u != "system:serviceaccount:kube-system:tidal" {
		t.Errorf("the base's policy applies to %s, want tidal's ServiceAccount", u)
	}
	if actions, _, _ := unstructured.NestedStringSlice(binding.Object, "spec", "validationActions"); strings.Join(actions, ",") != "Deny" {
		t.Errorf("the binding's actions %v, want Deny", actions)
	}

	chart := render(t, "autoscaling", map[string]any{"nodes": []any{"1:10:my-asg"}, "fullnameOverride": "scaler",
		"rbac": map[string]any{"serviceAccount": map[string]any{"name": "scaler-sa"}}})
	cp, cb := Find(chart, "ValidatingAdmissionPolicy", "scaler-pod-writes"), Find(chart, "ValidatingAdmissionPolicyBinding", "scaler-pod-writes")
	if cp == nil || cb == nil || !grantsPodPatch(t, chart, "scaler") {
		t.Fatal("the chart grants pods patch without its policy and binding")
	}
	if u := matchedUser(t, cp); u != "system:serviceaccount:autoscaling:scaler-sa" {
		t.Errorf("the chart's policy applies to %s, want the release's ServiceAccount", u)
	}
	if name, _, _ := unstructured.NestedString(cb.Object, "spec", "policyName"); name != "scaler-pod-writes" {
		t.Errorf("the chart's binding binds %q", name)
	}
	for _, o := range []*unstructured.Unstructured{policy, cp} {
		unstructured.RemoveNestedField(o.Object, "spec", "matchConditions")
	}
	if !sameJSON(t, policy.Object["spec"], cp.Object["spec"]) {
		t.Errorf("the chart's policy differs from the base's:\nbase  %v\nchart %v", policy.Object["spec"], cp.Object["spec"])
	}

	off := render(t, "autoscaling", map[string]any{"nodes": []any{"1:10:my-asg"}, "podLoop": map[string]any{"scaleInDeletionCost": false}})
	if grantsPodPatch(t, off, "tidal") {
		t.Error("podLoop.scaleInDeletionCost=false still grants pods patch")
	}
	if Find(off, "ValidatingAdmissionPolicy", "tidal-pod-writes") == nil {
		t.Error("podLoop.scaleInDeletionCost=false drops the policy, which still confines the pods/status patch of nominations")
	}
	if opts := parseArgs(t, checkDeployment(t, off)); opts.HPA.ScaleInDeletionCost {
		t.Error("podLoop.scaleInDeletionCost=false: tidal runs with --scale-in-deletion-cost")
	}
	on := render(t, "autoscaling", map[string]any{"nodes": []any{"1:10:my-asg"}})
	if opts := parseArgs(t, checkDeployment(t, on)); !opts.HPA.ScaleInDeletionCost {
		t.Error("the chart's default runs tidal without --scale-in-deletion-cost")
	}
}
