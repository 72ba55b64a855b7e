package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// iamPolicy is the part of an IAM policy document the tests read.
type iamPolicy struct {
	Statement []struct {
		Action    any            `json:"Action"`
		Resource  any            `json:"Resource"`
		Condition map[string]any `json:"Condition"`
	} `json:"Statement"`
}

func readPolicy(t *testing.T, name string) iamPolicy {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "aws", name))
	if err != nil {
		t.Fatal(err)
	}
	var p iamPolicy
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// strings of an IAM field that is a string or a list of them.
func iamStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}

// Cluster Autoscaler's minimal IAM policy (its AWS README) grants these; a
// role made from it needs exactly what docs/migrate-from-cluster-autoscaler.md
// lists on top, on every resource: tidal has no built-in instance type list
// and reads launch templates.
func TestIAMPolicyAddsToClusterAutoscalersMinimal(t *testing.T) {
	caMinimal := []string{"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
		"autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities", "autoscaling:SetDesiredCapacity",
		"autoscaling:TerminateInstanceInAutoScalingGroup", "eks:DescribeNodegroup"}
	wantExtra := []string{"ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeSpotPriceHistory"}
	var extra []string
	for _, st := range readPolicy(t, "iam-policy.json").Statement {
		for _, a := range iamStrings(st.Action) {
			if slices.Contains(caMinimal, a) {
				continue
			}
			extra = append(extra, a)
			if !slices.Equal(iamStrings(st.Resource), []string{"*"}) || st.Condition != nil {
				t.Errorf("%s is granted on %v with conditions %v; describe calls have no resource-level permissions, want *", a, st.Resource, st.Condition)
			}
		}
	}
	slices.Sort(extra)
	if !slices.Equal(extra, wantExtra) {
		t.Errorf("tidal's policy grants %v beyond Cluster Autoscaler's minimal one, the migration guide lists %v", extra, wantExtra)
	}
	doc, err := os.ReadFile(filepath.Join(Dir(), "..", "docs", "migrate-from-cluster-autoscaler.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range wantExtra {
		if !strings.Contains(string(doc), "`"+a+"`") {
			t.Errorf("docs/migrate-from-cluster-autoscaler.md does not name %s", a)
		}
	}
}

// The IRSA trust policy lets exactly the ServiceAccount deploy/ makes
// assume the role; the chart, given a Cluster Autoscaler values file, keeps
// that file's ServiceAccount, so the role its trust policy names works.
func TestTrustPolicyNamesTidalsServiceAccount(t *testing.T) {
	var sub []string
	for _, st := range readPolicy(t, "irsa-trust-policy.json").Statement {
		for _, cond := range st.Condition {
			for key, v := range cond.(map[string]any) {
				if strings.HasSuffix(key, ":sub") {
					sub = append(sub, iamStrings(v)...)
				}
			}
		}
	}
	sa := Find(kustomize(t, "aws"), "ServiceAccount", "tidal")
	if want := "system:serviceaccount:" + sa.GetNamespace() + ":" + sa.GetName(); !slices.Equal(sub, []string{want}) {
		t.Errorf("the trust policy lets %v assume the role, want %s", sub, want)
	}
	values := clusterAutoscalerValues(t)
	name := values["rbac"].(map[string]any)["serviceAccount"].(map[string]any)["name"].(string)
	if Find(render(t, "kube-system", values), "ServiceAccount", name) == nil {
		t.Errorf("the chart with Cluster Autoscaler's values makes no ServiceAccount %s: its IRSA role's trust policy would not match", name)
	}
}
