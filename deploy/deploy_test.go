package deploy

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
	"github.com/tidal-autoscaler/tidal/expander"
)

// The kinds an installation is made of, in both forms; the chart adds a
// Service for scraping.
var (
	wantKinds = []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "ConfigMap", "CustomResourceDefinition",
		"Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "ServiceAccount", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding"}
	wantChartKinds = []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "ConfigMap", "CustomResourceDefinition",
		"Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding"}
)

func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Kustomize(filepath.Join(Dir(), dir))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func render(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := RenderChart(filepath.Join(Dir(), "helm", "tidal"), "tidal", namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestBaseIsAProductionInstall(t *testing.T) {
	objs := kustomize(t, "base")
	checkInstall(t, "deploy/base", objs, "kube-system")
	args := checkDeployment(t, objs)
	opts := parseArgs(t, args)
	if opts.CloudProvider != "aws" {
		t.Errorf("base runs --cloud-provider=%s, want aws", opts.CloudProvider)
	}
}

func TestAWSOverlayDiscoversGroups(t *testing.T) {
	objs := kustomize(t, "aws")
	checkInstall(t, "deploy/aws", objs, "kube-system")
	opts := parseArgs(t, checkDeployment(t, objs))
	if len(opts.AWS.NodeGroupAutoDiscoveryFlags) != 1 || !strings.Contains(opts.AWS.NodeGroupAutoDiscoveryFlags[0], "k8s.io/cluster-autoscaler/enabled") {
		t.Errorf("the AWS overlay discovers %v, want Cluster Autoscaler's tags", opts.AWS.NodeGroupAutoDiscoveryFlags)
	}
	sa := Find(objs, "ServiceAccount", "tidal")
	if _, ok := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]; !ok {
		t.Error("the AWS overlay's ServiceAccount has no IRSA role annotation")
	}
}

func TestChartGrantsWhatTheBaseGrants(t *testing.T) {
	base := kustomize(t, "base")
	// Cluster Autoscaler's Lease in the same namespace, as in the base (see
	// TestChartReadsClusterAutoscalersLeaseInItsNamespace for another).
	chart := render(t, "autoscaling", map[string]any{"nodes": []any{"1:10:my-asg"}, "clusterAutoscalerLease": "autoscaling/cluster-autoscaler"})
	checkInstall(t, "the chart", chart, "autoscaling")
	for _, kind := range []string{"ClusterRole", "Role"} {
		b, c := Find(base, kind, "tidal"), Find(chart, kind, "tidal")
		if !sameJSON(t, b.Object["rules"], c.Object["rules"]) {
			t.Errorf("%s rules differ:\nbase  %v\nchart %v", kind, b.Object["rules"], c.Object["rules"])
		}
	}
	if b, c := Find(base, "CustomResourceDefinition", "podautoscalers.autoscaling.tidal.dev"),
		Find(chart, "CustomResourceDefinition", "podautoscalers.autoscaling.tidal.dev"); !sameJSON(t, b.Object["spec"], c.Object["spec"]) {
		t.Error("the chart's CRD differs from deploy/crd's")
	}
	var bd, cd appsv1.Deployment
	convert(t, Find(base, "Deployment", "tidal"), &bd)
	convert(t, Find(chart, "Deployment", "tidal"), &cd)
	bp, cp := bd.Spec.Template.Spec, cd.Spec.Template.Spec
	for name, pair := range map[string][2]any{
		"pod securityContext":       {bp.SecurityContext, cp.SecurityContext},
		"container securityContext": {bp.Containers[0].SecurityContext, cp.Containers[0].SecurityContext},
		"resources":                 {bp.Containers[0].Resources, cp.Containers[0].Resources},
		"liveness probe":            {bp.Containers[0].LivenessProbe, cp.Containers[0].LivenessProbe},
		"readiness probe":           {bp.Containers[0].ReadinessProbe, cp.Containers[0].ReadinessProbe},
		"tolerations":               {bp.Tolerations, cp.Tolerations},
		"priorityClassName":         {bp.PriorityClassName, cp.PriorityClassName},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s differs:\nbase  %+v\nchart %+v", name, pair[0], pair[1])
		}
	}
	opts := parseArgs(t, checkDeployment(t, chart))
	if opts.Namespace != "autoscaling" {
		t.Errorf("the chart runs tidal with --namespace=%s, want the release's namespace", opts.Namespace)
	}
}

// The chart's values become flags that tidal accepts.
func TestChartValuesBecomeFlags(t *testing.T) {
	chart := render(t, "kube-system", map[string]any{
		"autoDiscovery":    map[string]any{"clusterName": "prod"},
		"awsRegion":        "eu-west-1",
		"expander":         "priority,least-waste",
		"provisionAhead":   false,
		"podLoop":          map[string]any{"hpaObjects": true, "prometheusURL": "http://prometheus:9090"},
		"extraArgs":        map[string]any{"scale-down-unneeded-time": "5m", "balance-similar-node-groups": true},
		"priorityExpander": map[string]any{"priorities": map[string]any{"50": []any{"spot-.*"}, "10": []any{".*"}}},
	})
	opts := parseArgs(t, checkDeployment(t, chart))
	got := map[string]any{
		"discovery": opts.AWS.NodeGroupAutoDiscoveryFlags, "region": opts.AWS.Region, "expander": opts.ScaleUp.Expander,
		"ahead": opts.ScaleUp.ProvisionAhead, "hpaObjects": opts.HPA.HPAObjects, "prometheus": opts.HPA.PrometheusURL,
		"unneeded": opts.ScaleDown.UnneededTime.String(), "balance": opts.ScaleUp.BalanceSimilarNodeGroups,
	}
	want := map[string]any{
		"discovery": []string{"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod"},
		"region":    "eu-west-1", "expander": "priority,least-waste", "ahead": false, "hpaObjects": true,
		"prometheus": "http://prometheus:9090", "unneeded": "5m0s", "balance": true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags from values:\ngot  %v\nwant %v", got, want)
	}
	cm := Find(chart, "ConfigMap", "cluster-autoscaler-priority-expander")
	p, err := expander.ParsePriorities(cm.Object["data"].(map[string]any)["priorities"].(string))
	if err != nil {
		t.Fatalf("the chart's priority ConfigMap: %v", err)
	}
	if p == nil {
		t.Fatal("the chart's priority ConfigMap parsed to nothing")
	}
}

// checkInstall checks what every installation must hold: each kind once
// (ConfigMaps twice), namespaced objects in ns, the ServiceAccount bound to
// both roles.
func checkInstall(t *testing.T, what string, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		if namespaced(o.GetKind()) && o.GetNamespace() != ns {
			t.Errorf("%s: %s %s is in namespace %q, want %q", what, o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
	}
	slices.Sort(kinds)
	want := wantKinds
	if what == "the chart" {
		want = wantChartKinds
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("%s holds %v, want %v", what, kinds, want)
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		var b rbacv1.RoleBinding // same fields as ClusterRoleBinding for subjects and roleRef
		convert(t, Find(objs, kind, "tidal"), &b)
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "tidal", Namespace: ns}}
		if !reflect.DeepEqual(b.Subjects, want) || b.RoleRef.Name != "tidal" {
			t.Errorf("%s: %s binds %v to %s, want %v to tidal", what, kind, b.Subjects, b.RoleRef.Name, want)
		}
	}
}

// checkDeployment checks the production settings of tidal's Deployment and
// its PDB, and returns tidal's arguments.
func checkDeployment(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var d appsv1.Deployment
	convert(t, Find(objs, "Deployment", "tidal"), &d)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	checks := map[string]bool{
		"2 replicas": d.Spec.Replicas != nil && *d.Spec.Replicas == 2,
		"priorityClassName system-cluster-critical": spec.PriorityClassName == "system-cluster-critical",
		"serviceAccountName tidal":                  spec.ServiceAccountName == "tidal",
		"runAsNonRoot":                              spec.SecurityContext != nil && ptrTrue(spec.SecurityContext.RunAsNonRoot),
		"readOnlyRootFilesystem":                    c.SecurityContext != nil && ptrTrue(c.SecurityContext.ReadOnlyRootFilesystem),
		"no privilege escalation":                   c.SecurityContext != nil && c.SecurityContext.AllowPrivilegeEscalation != nil && !*c.SecurityContext.AllowPrivilegeEscalation,
		"capabilities dropped":                      c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && slices.Contains(c.SecurityContext.Capabilities.Drop, "ALL"),
		"cpu and memory requests":                   !c.Resources.Requests.Cpu().IsZero() && !c.Resources.Requests.Memory().IsZero(),
		"liveness probe on /healthz":                probesHealthz(c.LivenessProbe),
		"readiness probe on /healthz":               probesHealthz(c.ReadinessProbe),
		"Prometheus scrape annotations":             d.Spec.Template.Annotations["prometheus.io/scrape"] == "true" && d.Spec.Template.Annotations["prometheus.io/port"] != "",
		"a termination grace period covering tidal's shutdown (" + config.ShutdownTime.String() + ")": spec.TerminationGracePeriodSeconds != nil &&
			time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second >= config.ShutdownTime,
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("tidal's Deployment: want %s", name)
		}
	}
	var pdb policyv1.PodDisruptionBudget
	convert(t, Find(objs, "PodDisruptionBudget", "tidal"), &pdb)
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the PDB's selector %v does not select tidal's pods %v", pdb.Spec.Selector, d.Spec.Template.Labels)
	}
	return c.Args
}

func probesHealthz(p *corev1.Probe) bool {
	return p != nil && p.HTTPGet != nil && p.HTTPGet.Path == "/healthz"
}

func ptrTrue(b *bool) bool { return b != nil && *b }

// parseArgs parses and validates args with tidal's own flags.
func parseArgs(t *testing.T, args []string) *config.Options {
	t.Helper()
	opts := config.NewOptions()
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	opts.AddFlags(fs)
	// klog's, which tidal's command adds beside its own.
	fs.Int("v", 0, "")
	fs.String("vmodule", "", "")
	fs.Bool("logtostderr", true, "")
	fs.String("stderrthreshold", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("tidal's args %v: %v", args, err)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("tidal's args %v: %v", args, err)
	}
	return opts
}

// sameJSON compares as JSON: kustomize and Helm decode numbers to
// different Go types.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func convert(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if o == nil {
		t.Fatalf("no such object for %T", into)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatal(err)
	}
}

// tidal's Role grants ConfigMaps by name only (the namespace may hold
// ConfigMaps that grant power, such as EKS's aws-auth): get and update of
// the status ConfigMap the installation makes and tidal's args name, list
// and watch of the priority expander's; the Lease by the name tidal uses.
func TestRoleNamesTidalsOwnObjects(t *testing.T) {
	for what, objs := range map[string][]*unstructured.Unstructured{
		"deploy/base": kustomize(t, "base"),
		"the chart":   render(t, "kube-system", map[string]any{"nodes": []any{"1:10:my-asg"}}),
	} {
		opts := parseArgs(t, checkDeployment(t, objs))
		var role rbacv1.Role
		convert(t, Find(objs, "Role", "tidal"), &role)
		granted := map[string][]string{}
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				if len(r.ResourceNames) == 0 && res == "configmaps" {
					t.Errorf("%s: the Role grants %v on every ConfigMap of the namespace", what, r.Verbs)
				}
				for _, v := range r.Verbs {
					granted[res+" "+v] = append(granted[res+" "+v], r.ResourceNames...)
				}
			}
		}
		want := map[string][]string{
			"configmaps get": {opts.ScaleUp.StatusConfigMapName}, "configmaps update": {opts.ScaleUp.StatusConfigMapName},
			"configmaps list":  {expander.PriorityConfigMapName, expander.CAPriorityConfigMapName, nodeschedule.ConfigMapName},
			"configmaps watch": {expander.PriorityConfigMapName, expander.CAPriorityConfigMapName, nodeschedule.ConfigMapName},
			"leases get":       {opts.LeaseName, opts.Coexist.CALeaseName}, "leases update": {opts.LeaseName},
		}
		for grant, names := range want {
			if !reflect.DeepEqual(granted[grant], names) {
				t.Errorf("%s: the Role grants %s on %v, want exactly %v", what, grant, granted[grant], names)
			}
		}
		if Find(objs, "ConfigMap", opts.ScaleUp.StatusConfigMapName) == nil {
			t.Errorf("%s: no ConfigMap %s: tidal may update it but not create it", what, opts.ScaleUp.StatusConfigMapName)
		}
	}
}
