package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/expander"
)

// ClusterAutoscalerValues reads testdata's Cluster Autoscaler values file.
func clusterAutoscalerValues(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "testdata", "cluster-autoscaler-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A Cluster Autoscaler user's values file renders a tidal with each value
// where Cluster Autoscaler's chart puts it.
func TestChartTakesClusterAutoscalerValues(t *testing.T) {
	objs := render(t, "kube-system", clusterAutoscalerValues(t))
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", "cluster-autoscaler"), &d)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	opts := parseArgs(t, c.Args)

	got := map[string]any{
		"discovery": opts.AWS.NodeGroupAutoDiscoveryFlags, "region": opts.AWS.Region, "expander": opts.ScaleUp.Expander,
		"balance": opts.ScaleUp.BalanceSimilarNodeGroups, "ignore labels": opts.ScaleUp.BalancingIgnoreLabels,
		"lease": opts.LeaseName, "status": opts.ScaleUp.StatusConfigMapName,
		"unneeded": opts.ScaleDown.UnneededTime.String(), "threshold": opts.ScaleDown.UtilizationThreshold,
		"local storage": opts.ScaleDown.SkipNodesWithLocalStorage,
	}
	want := map[string]any{
		"discovery": []string{"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod-eu"},
		"region":    "eu-west-1", "expander": "priority,least-waste", "balance": true,
		"ignore labels": []string{"topology.ebs.csi.aws.com/zone", "eks.amazonaws.com/nodegroup"},
		"lease":         "cluster-autoscaler", "status": "cluster-autoscaler-status",
		"unneeded": "5m0s", "threshold": 0.6, "local storage": false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tidal's options from the values:\ngot  %v\nwant %v", got, want)
	}
	if n := countPrefix(c.Args, "--expander="); n != 1 {
		t.Errorf("--expander given %d times in %v, want once (extraArgs.expander replaces the chart's)", n, c.Args)
	}

	sa := Find(objs, "ServiceAccount", "cluster-autoscaler")
	if sa == nil || sa.GetAnnotations()["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/cluster-autoscaler" {
		t.Errorf("the ServiceAccount cluster-autoscaler with the IRSA role from rbac.serviceAccount: got %v", sa)
	}
	if pod.ServiceAccountName != "cluster-autoscaler" {
		t.Errorf("the pods run as %q, want rbac.serviceAccount.name", pod.ServiceAccountName)
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		var b rbacv1.RoleBinding
		convert(t, Find(objs, kind, "cluster-autoscaler"), &b)
		if len(b.Subjects) != 1 || b.Subjects[0].Name != "cluster-autoscaler" || b.Subjects[0].Namespace != "kube-system" {
			t.Errorf("%s binds %v, want the ServiceAccount kube-system/cluster-autoscaler", kind, b.Subjects)
		}
	}

	checkRoleNames(t, objs, "cluster-autoscaler", opts.LeaseName, opts.ScaleUp.StatusConfigMapName)
	checkPodValues(t, d)
	checkObjectValues(t, objs)
}

// checkRoleNames checks that the Role lets tidal use the Lease and the
// status ConfigMap its flags name, and that the chart makes that ConfigMap.
func checkRoleNames(t *testing.T, objs []*unstructured.Unstructured, role, lease, status string) {
	t.Helper()
	var r rbacv1.Role
	convert(t, Find(objs, "Role", role), &r)
	granted := map[string][]string{}
	for _, rule := range r.Rules {
		for _, v := range rule.Verbs {
			granted[rule.Resources[0]+" "+v] = append(granted[rule.Resources[0]+" "+v], rule.ResourceNames...)
		}
	}
	for grant, want := range map[string][]string{"leases update": {lease}, "configmaps update": {status}} {
		if !reflect.DeepEqual(granted[grant], want) {
			t.Errorf("the Role grants %s on %v, want %v", grant, granted[grant], want)
		}
	}
	if Find(objs, "ConfigMap", status) == nil {
		t.Errorf("the chart makes no status ConfigMap %s", status)
	}
}

// checkPodValues checks the Deployment's fields that come from the values.
func checkPodValues(t *testing.T, d appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	checks := map[string][2]any{
		"image":                         {c.Image, "registry.example.com/tidal:v0.1.0"},
		"pullPolicy":                    {c.ImagePullPolicy, corev1.PullAlways},
		"imagePullSecrets":              {pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "registry-credentials"}}},
		"extraEnv":                      {c.Env, []corev1.EnvVar{{Name: "AWS_STS_REGIONAL_ENDPOINTS", Value: "regional"}}},
		"envFromSecret":                 {c.EnvFrom, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "autoscaler-proxy"}}}}},
		"extraVolumes":                  {len(pod.Volumes) == 1 && pod.Volumes[0].Name == "ssl-certs" && pod.Volumes[0].HostPath != nil, true},
		"extraVolumeMounts":             {c.VolumeMounts, []corev1.VolumeMount{{Name: "ssl-certs", MountPath: "/etc/ssl/certs/ca-certificates.crt", ReadOnly: true}}},
		"resources":                     {c.Resources.Requests.Memory().String() + " " + c.Resources.Limits.Memory().String(), "600Mi 2Gi"},
		"nodeSelector":                  {pod.NodeSelector, map[string]string{"node-role": "system", "kubernetes.io/os": "linux"}},
		"tolerations":                   {pod.Tolerations, []corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "system", Effect: "NoSchedule"}}},
		"affinity":                      {pod.Affinity != nil && pod.Affinity.NodeAffinity != nil && pod.Affinity.PodAntiAffinity == nil, true},
		"topologySpread":                {len(pod.TopologySpreadConstraints) == 1 && pod.TopologySpreadConstraints[0].TopologyKey == "topology.kubernetes.io/zone", true},
		"priorityClassName":             {pod.PriorityClassName, "system-node-critical"},
		"podAnnotations":                {d.Spec.Template.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"], "false"},
		"additionalLabels":              {d.Labels["team"] + " " + d.Spec.Template.Labels["team"], "platform platform"},
		"updateStrategy":                {d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() == 1, true},
		"terminationGracePeriodSeconds": {*pod.TerminationGracePeriodSeconds, int64(400)},
	}
	for name, pair := range checks {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: got %+v, want %+v", name, pair[0], pair[1])
		}
	}
}

// checkObjectValues checks the objects besides the Deployment.
func checkObjectValues(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var pdb policyv1.PodDisruptionBudget
	convert(t, Find(objs, "PodDisruptionBudget", "cluster-autoscaler"), &pdb)
	if pdb.Spec.MaxUnavailable != nil || pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) {
		t.Errorf("the PDB has minAvailable %v, maxUnavailable %v; want 1 and none", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	var svc corev1.Service
	convert(t, Find(objs, "Service", "cluster-autoscaler"), &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9090 || svc.Spec.Ports[0].TargetPort.String() != "http" ||
		svc.Annotations["prometheus.io/scrape"] != "true" {
		t.Errorf("the Service: ports %v, annotations %v; want 9090 to the pods' http port, with the annotation", svc.Spec.Ports, svc.Annotations)
	}
	sm := Find(objs, "ServiceMonitor", "cluster-autoscaler")
	if sm == nil || sm.GetNamespace() != "monitoring" || sm.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Fatalf("want a ServiceMonitor in monitoring with the selector's label, got %v", sm)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "http" || endpoints[0].(map[string]any)["interval"] != "30s" {
		t.Errorf("the ServiceMonitor scrapes %v, want the Service's http port every 30s", endpoints)
	}
	pr := Find(objs, "PrometheusRule", "cluster-autoscaler")
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if pr.GetNamespace() != "monitoring" || len(groups) != 1 || !strings.Contains(toYAML(t, groups), "tidal_unschedulable_pods_count > 0") {
		t.Errorf("the PrometheusRule in %s holds %v, want the values' rule in monitoring", pr.GetNamespace(), groups)
	}
	cm := Find(objs, "ConfigMap", expander.CAPriorityConfigMapName)
	p, err := expander.ParsePriorities(cm.Object["data"].(map[string]any)["priorities"].(string))
	if err != nil || p == nil || cm.GetAnnotations()["owner"] != "platform" {
		t.Errorf("the priority ConfigMap from expanderPriorities: %v, %v, annotations %v", p, err, cm.GetAnnotations())
	}
	if !strings.Contains(toYAML(t, cm.Object["data"]), ".*spot.*") {
		t.Errorf("the priority ConfigMap %v lacks expanderPriorities' .*spot.*", cm.Object["data"])
	}
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func countPrefix(args []string, prefix string) int {
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			n++
		}
	}
	return n
}

// Cluster Autoscaler's chart's extraArgs form: key_N repeats a flag, a null
// value passes the bare flag; flags tidal does not know pass as they are.
func TestChartPassesExtraArgsAsClusterAutoscalersChart(t *testing.T) {
	values := clusterAutoscalerValues(t)
	extra := values["extraArgs"].(map[string]any)
	extra["v"] = 4
	extra["logtostderr"] = true
	extra["stderrthreshold"] = "info"
	extra["aws-use-static-instance-list"] = nil
	objs := render(t, "kube-system", values)
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", "cluster-autoscaler"), &d)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--logtostderr=true", "--stderrthreshold=info", "--aws-use-static-instance-list", "--v=4",
		"--balancing-ignore-label=topology.ebs.csi.aws.com/zone", "--balancing-ignore-label=eks.amazonaws.com/nodegroup"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

// autoscalingGroups become --nodes in Cluster Autoscaler's MIN:MAX:NAME.
func TestChartAutoscalingGroupsBecomeNodes(t *testing.T) {
	objs := render(t, "kube-system", map[string]any{"autoscalingGroups": []any{
		map[string]any{"name": "on-demand", "minSize": 1, "maxSize": 10},
		map[string]any{"name": "gpu", "minSize": 0, "maxSize": 4},
	}})
	opts := parseArgs(t, checkDeployment(t, objs))
	if want := []string{"1:10:on-demand", "0:4:gpu"}; !reflect.DeepEqual(opts.NodeGroupFlags, want) {
		t.Errorf("--nodes %v, want %v", opts.NodeGroupFlags, want)
	}
}

// The chart refuses, naming what is wrong, values that would install a
// tidal with nothing to do or that tidal would refuse at start.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"no node groups", map[string]any{}, []string{"no node groups", "autoscalingGroups", "autoDiscovery.clusterName"}},
		{"groups and discovery", map[string]any{"nodes": []any{"1:3:a"}, "autoDiscovery": map[string]any{"clusterName": "prod"}},
			[]string{"cannot be combined"}},
		{"both PDB bounds", map[string]any{"nodes": []any{"1:3:a"}, "podDisruptionBudget": map[string]any{"minAvailable": 1}},
			[]string{"minAvailable or maxUnavailable, not both"}},
		{"replicaCount a string", map[string]any{"nodes": []any{"1:3:a"}, "replicaCount": "two"}, []string{"replicaCount", "integer"}},
		{"minSize a string", map[string]any{"autoscalingGroups": []any{map[string]any{"name": "a", "minSize": "1", "maxSize": 3}}},
			[]string{"autoscalingGroups", "minSize", "integer"}},
		{"a group without a name", map[string]any{"autoscalingGroups": []any{map[string]any{"minSize": 1, "maxSize": 3}}},
			[]string{"autoscalingGroups", "name"}},
		{"a cloud config on aws", map[string]any{"nodes": []any{"1:3:a"}, "cloudConfigPath": "/etc/aws.conf"},
			[]string{"cloudConfigPath /etc/aws.conf", "externalgrpc", "leave cloudConfigPath out"}},
		{"another cloud", map[string]any{"nodes": []any{"1:3:a"}, "cloudProvider": "gce"}, []string{"cloudProvider", "aws", "local"}},
		{"nested extraArgs", map[string]any{"nodes": []any{"1:3:a"}, "extraArgs": map[string]any{"v": map[string]any{"x": 1}}},
			[]string{"extraArgs", "v"}},
		{"a ServiceMonitor without the Service", map[string]any{"nodes": []any{"1:3:a"},
			"serviceMonitor": map[string]any{"enabled": true}, "service": map[string]any{"create": false}}, []string{"service.create"}},
		{"deletion cost in extraArgs", map[string]any{"nodes": []any{"1:3:a"}, "extraArgs": map[string]any{"scale-in-deletion-cost": false}},
			[]string{"podLoop.scaleInDeletionCost", "patch pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderChart(filepath.Join(Dir(), "helm", "tidal"), "tidal", "kube-system", tc.values)
			if err == nil {
				t.Fatalf("the chart rendered values %v", tc.values)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not name %q:\n%v", w, err)
				}
			}
		})
	}
}

// tidal installed outside Cluster Autoscaler's namespace reads its Lease
// through a Role there that grants get of that Lease only; with the check
// off, nothing is granted.
func TestChartReadsClusterAutoscalersLeaseInItsNamespace(t *testing.T) {
	objs := render(t, "autoscaling", map[string]any{"nodes": []any{"1:10:my-asg"}, "clusterAutoscalerLease": "kube-system/ca-leader"})
	opts := parseArgs(t, checkDeployment(t, objs))
	if opts.Coexist.CALeaseNamespace != "kube-system" || opts.Coexist.CALeaseName != "ca-leader" {
		t.Errorf("tidal watches %s/%s, want kube-system/ca-leader", opts.Coexist.CALeaseNamespace, opts.Coexist.CALeaseName)
	}
	var role rbacv1.Role
	convert(t, Find(objs, "Role", "tidal-cluster-autoscaler-lease"), &role)
	want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"ca-leader"}, Verbs: []string{"get"}}}
	if role.Namespace != "kube-system" || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("the Role in %s grants %+v, want %+v in kube-system", role.Namespace, role.Rules, want)
	}
	var b rbacv1.RoleBinding
	convert(t, Find(objs, "RoleBinding", "tidal-cluster-autoscaler-lease"), &b)
	if b.Namespace != "kube-system" || b.RoleRef.Name != role.Name || len(b.Subjects) != 1 || b.Subjects[0].Namespace != "autoscaling" {
		t.Errorf("the RoleBinding %s/%s binds %v to %s", b.Namespace, b.Name, b.Subjects, b.RoleRef.Name)
	}
	var own rbacv1.Role
	convert(t, Find(objs, "Role", "tidal"), &own)
	for _, r := range own.Rules {
		if slices.Contains(r.ResourceNames, "ca-leader") || slices.Contains(r.ResourceNames, "cluster-autoscaler") {
			t.Errorf("tidal's own Role grants %v in autoscaling", r)
		}
	}

	off := render(t, "autoscaling", map[string]any{"nodes": []any{"1:10:my-asg"}, "clusterAutoscalerLease": ""})
	if opts := parseArgs(t, checkDeployment(t, off)); opts.Coexist.CALeaseName != "" {
		t.Errorf("with the check off tidal still watches %s", opts.Coexist.CALeaseName)
	}
	if Find(off, "Role", "tidal-cluster-autoscaler-lease") != nil {
		t.Error("with the check off the chart still grants Cluster Autoscaler's Lease")
	}
}

// AWS keys in Cluster Autoscaler's values become a Secret and tidal's
// environment, as in its chart; extraObjects are installed as given.
func TestChartTakesAWSKeysAndExtraObjects(t *testing.T) {
	objs := render(t, "kube-system", map[string]any{"nodes": []any{"1:10:my-asg"},
		"awsAccessKeyID": "AKIAEXAMPLE", "awsSecretAccessKey": "c2VjcmV0",
		"extraObjects": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "{{ .Release.Name }}-extra"}}}})
	var secret corev1.Secret
	convert(t, Find(objs, "Secret", "tidal"), &secret)
	if string(secret.Data["AwsAccessKeyId"]) != "AKIAEXAMPLE" || string(secret.Data["AwsSecretAccessKey"]) != "c2VjcmV0" {
		t.Errorf("the Secret holds %v", secret.Data)
	}
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", "tidal"), &d)
	var env []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env = append(env, e.Name+"="+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
		}
	}
	if want := []string{"AWS_ACCESS_KEY_ID=tidal/AwsAccessKeyId", "AWS_SECRET_ACCESS_KEY=tidal/AwsSecretAccessKey"}; !slices.Equal(env, want) {
		t.Errorf("tidal's environment from Secrets %v, want %v", env, want)
	}
	if Find(objs, "ConfigMap", "tidal-extra") == nil {
		t.Error("extraObjects' ConfigMap was not rendered")
	}
}

// What helm prints after the install names the values of Cluster
// Autoscaler's chart that tidal does not use, rather than dropping them
// silently.
func TestChartNotesNameIgnoredValues(t *testing.T) {
	values := clusterAutoscalerValues(t)
	values["vpa"] = map[string]any{"enabled": true}
	values["azureClientID"] = "id"
	values["serviceAccount"] = map[string]any{"name": "old"}
	notes, err := RenderNotes(filepath.Join(Dir(), "helm", "tidal"), "autoscaler", "kube-system", values)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Not used by tidal, though set: azureClientID, serviceAccount (now rbac.serviceAccount), vpa.", "kube-system/cluster-autoscaler", "cluster-autoscaler-status"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
	plain, err := RenderNotes(filepath.Join(Dir(), "helm", "tidal"), "tidal", "kube-system", map[string]any{"nodes": []any{"1:3:a"}})
	if err != nil || strings.Contains(plain, "Not used") {
		t.Errorf("NOTES of plain values (err %v):\n%s", err, plain)
	}
}
