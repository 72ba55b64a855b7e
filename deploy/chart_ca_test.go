package deploy

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// caChartValues is Cluster Autoscaler's chart's values.yaml with user's
// values on top.
func caChartValues(t *testing.T, user map[string]any) map[string]any {
	t.Helper()
	v, err := CAChartValues(user)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An EKS user's values on top of Cluster Autoscaler's chart's values.yaml.
func eksUser() map[string]any {
	return map[string]any{
		"autoDiscovery": map[string]any{"clusterName": "prod"},
		"awsRegion":     "eu-west-1",
		"image":         map[string]any{"tag": "v1.35.0"},
		"rbac": map[string]any{"serviceAccount": map[string]any{"annotations": map[string]any{
			"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/ca"}}},
	}
}

// Cluster Autoscaler's chart's values install a tidal that runs: tidal's
// image and version instead of Cluster Autoscaler's, every object and the
// ServiceAccount (with its IRSA annotation) under Cluster Autoscaler's
// chart's names, and NOTES saying both, with the trust policy's subject.
func TestChartFromClusterAutoscalersChartValues(t *testing.T) {
	values := caChartValues(t, eksUser())
	objs, err := RenderChart(filepath.Join(Dir(), "helm", "tidal"), "ca", "kube-system", values)
	if err != nil {
		t.Fatal(err)
	}
	const name = "ca-aws-cluster-autoscaler"
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", name), &d)
	pod := d.Spec.Template.Spec
	if img := pod.Containers[0].Image; img != "ghcr.io/tidal-autoscaler/tidal:v0.1.0" {
		t.Errorf("image %s, want tidal's at the chart's appVersion", img)
	}
	if pod.ServiceAccountName != name {
		t.Errorf("the pods run as %s, want Cluster Autoscaler's chart's %s", pod.ServiceAccountName, name)
	}
	var sa corev1.ServiceAccount
	convert(t, Find(objs, "ServiceAccount", name), &sa)
	if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/ca" {
		t.Errorf("the ServiceAccount's annotations %v lack the IRSA role", sa.Annotations)
	}
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "PodDisruptionBudget"} {
		if Find(objs, kind, name) == nil {
			t.Errorf("no %s %s", kind, name)
		}
	}
	opts := parseArgs(t, pod.Containers[0].Args)
	if want := []string{"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod"}; !slices.Equal(opts.AWS.NodeGroupAutoDiscoveryFlags, want) ||
		opts.AWS.Region != "eu-west-1" {
		t.Errorf("discovery %v in %s, want %v in eu-west-1", opts.AWS.NodeGroupAutoDiscoveryFlags, opts.AWS.Region, want)
	}

	notes, err := RenderNotes(filepath.Join(Dir(), "helm", "tidal"), "ca", "kube-system", values)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Cluster Autoscaler's image or release (registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0)",
		"tidal's image ghcr.io/tidal-autoscaler/tidal:v0.1.0 runs instead", "named as Cluster Autoscaler's chart names them (" + name,
		"system:serviceaccount:kube-system:" + name, "names the role arn:aws:iam::111122223333:role/ca"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "Not used") {
		t.Errorf("NOTES name unused values, though the file sets none but Cluster Autoscaler's defaults:\n%s", notes)
	}
}

// Names follow Cluster Autoscaler's chart's rules (fullnameOverride,
// nameOverride, a release named as the chart, rbac.serviceAccount.name)
// with its values, and tidal's otherwise.
func TestChartNamesAsClusterAutoscalersChart(t *testing.T) {
	for _, tc := range []struct {
		name, release  string
		user           map[string]any
		objects, sa    string
		image          string
		clusterAutosca bool
	}{
		{"default", "ca", nil, "ca-aws-cluster-autoscaler", "ca-aws-cluster-autoscaler", "ghcr.io/tidal-autoscaler/tidal:v0.1.0", true},
		{"fullnameOverride", "ca", map[string]any{"fullnameOverride": "cluster-autoscaler"}, "cluster-autoscaler", "cluster-autoscaler", "", true},
		{"nameOverride", "ca", map[string]any{"nameOverride": "scaler"}, "ca-scaler", "ca-scaler", "", true},
		{"a release named as the chart", "aws-cluster-autoscaler", nil, "aws-cluster-autoscaler", "aws-cluster-autoscaler", "", true},
		{"rbac.serviceAccount.name", "ca", map[string]any{"rbac": map[string]any{"serviceAccount": map[string]any{"name": "cluster-autoscaler"}}},
			"ca-aws-cluster-autoscaler", "cluster-autoscaler", "", true},
		{"tidal's names asked for", "ca", map[string]any{"clusterAutoscalerNames": false}, "ca-tidal", "ca-tidal", "", false},
		{"tidal's image", "ca", map[string]any{"image": map[string]any{"repository": "registry.example.com/tidal", "tag": "v0.1.0"}},
			"ca-tidal", "ca-tidal", "registry.example.com/tidal:v0.1.0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := eksUser()
			for k, v := range tc.user {
				user = MergeValues(user, map[string]any{k: v})
			}
			objs, err := RenderChart(filepath.Join(Dir(), "helm", "tidal"), tc.release, "kube-system", caChartValues(t, user))
			if err != nil {
				t.Fatal(err)
			}
			var d appsv1.Deployment
			convert(t, Find(objs, "Deployment", tc.objects), &d)
			if got := d.Spec.Template.Spec.ServiceAccountName; got != tc.sa || Find(objs, "ServiceAccount", tc.sa) == nil {
				t.Errorf("ServiceAccount %s, want %s, made by the chart", got, tc.sa)
			}
			var b rbacv1.ClusterRoleBinding
			convert(t, Find(objs, "ClusterRoleBinding", tc.objects), &b)
			if len(b.Subjects) != 1 || b.Subjects[0].Name != tc.sa {
				t.Errorf("the ClusterRoleBinding binds %v, want %s", b.Subjects, tc.sa)
			}
			if tc.image != "" && d.Spec.Template.Spec.Containers[0].Image != tc.image {
				t.Errorf("image %s, want %s", d.Spec.Template.Spec.Containers[0].Image, tc.image)
			}
			if caName := strings.HasSuffix(d.Spec.Selector.MatchLabels["app.kubernetes.io/name"], "cluster-autoscaler") || tc.user["nameOverride"] != nil; caName != tc.clusterAutosca {
				t.Errorf("selector %v: Cluster Autoscaler's name %v, want %v", d.Spec.Selector.MatchLabels, caName, tc.clusterAutosca)
			}
		})
	}
}

// A tag of Cluster Autoscaler's releases with tidal's repository, as a
// values file that sets only image.tag gives, runs tidal's version.
func TestChartReplacesClusterAutoscalersTag(t *testing.T) {
	values := map[string]any{"nodes": []any{"1:3:a"}, "image": map[string]any{"tag": "v1.35.0"}}
	objs := render(t, "kube-system", values)
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", "tidal-aws-cluster-autoscaler"), &d)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/tidal-autoscaler/tidal:v0.1.0" {
		t.Errorf("image %s, want tidal's v0.1.0", img)
	}
	notes, err := RenderNotes(filepath.Join(Dir(), "helm", "tidal"), "tidal", "kube-system", values)
	if err != nil || !strings.Contains(notes, "image or release (ghcr.io/tidal-autoscaler/tidal:v1.35.0):\ntidal's image ghcr.io/tidal-autoscaler/tidal:v0.1.0 runs instead") {
		t.Errorf("NOTES (err %v) do not say the tag was replaced:\n%s", err, notes)
	}
	own := render(t, "kube-system", map[string]any{"nodes": []any{"1:3:a"}, "image": map[string]any{"tag": "v0.0.9"}})
	convert(t, Find(own, "Deployment", "tidal"), &d)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/tidal-autoscaler/tidal:v0.0.9" {
		t.Errorf("image %s, want tidal's v0.0.9 as pinned", img)
	}
}

// NOTES name each value of Cluster Autoscaler's chart set to other than
// its default that tidal's chart does not use, at any depth it has named
// fields; its defaults are not named.
func TestChartNotesNameEveryUnusedClusterAutoscalerValue(t *testing.T) {
	user := MergeValues(eksUser(), map[string]any{
		"azureClientID": "id", "kwokConfigMapName": "kwok-provider-config", "clusterAPIMode": "kubeconfig-incluster",
		"rbac":           map[string]any{"clusterScoped": false, "pspEnabled": false},
		"autoDiscovery":  map[string]any{"labels": []any{map[string]any{"color": "green"}}, "roles": []any{"worker"}},
		"vpa":            map[string]any{"enabled": true},
		"serviceMonitor": map[string]any{"relabelings": []any{}},
	})
	notes, err := RenderNotes(filepath.Join(Dir(), "helm", "tidal"), "ca", "kube-system", caChartValues(t, user))
	if err != nil {
		t.Fatal(err)
	}
	const want = "Not used by tidal, though set: autoDiscovery.labels, azureClientID, clusterAPIMode, rbac.clusterScoped, vpa."
	if !strings.Contains(notes, want) {
		t.Errorf("NOTES lack %q:\n%s", want, notes)
	}
}

// rbac.additionalRules add to the ClusterRole; cloudConfigPath is tidal's
// --cloud-config with externalgrpc, as Cluster Autoscaler's chart passes it.
func TestChartAdditionalRulesAndCloudConfig(t *testing.T) {
	rule := map[string]any{"apiGroups": []any{"cluster.x-k8s.io"}, "resources": []any{"machines"}, "verbs": []any{"get", "list"}}
	objs := render(t, "kube-system", map[string]any{"cloudProvider": "externalgrpc", "cloudConfigPath": "/etc/tidal/cloud-config.yaml",
		"rbac": map[string]any{"additionalRules": []any{rule}}})
	var cr rbacv1.ClusterRole
	convert(t, Find(objs, "ClusterRole", "tidal"), &cr)
	want := rbacv1.PolicyRule{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines"}, Verbs: []string{"get", "list"}}
	if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return reflect.DeepEqual(r, want) }) {
		t.Errorf("the ClusterRole's rules %v lack %v", cr.Rules, want)
	}
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", "tidal"), &d)
	if opts := parseArgs(t, d.Spec.Template.Spec.Containers[0].Args); opts.CloudConfig != "/etc/tidal/cloud-config.yaml" || opts.CloudProvider != "externalgrpc" {
		t.Errorf("tidal runs --cloud-provider=%s --cloud-config=%s", opts.CloudProvider, opts.CloudConfig)
	}
}
