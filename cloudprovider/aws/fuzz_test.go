package aws

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// FuzzParseProviderID feeds the providerIDs Nodes carry: no input panics,
// and what is accepted is exactly what ProviderID writes.
func FuzzParseProviderID(f *testing.F) {
	for _, seed := range []string{"aws:///us-east-1a/i-0123456789abcdef0", "aws:///eu-west-1b/i-01234567",
		"aws:///us-east-1a/i-placeholder-workers-3", "aws:///us-east-1a/fargate-ip-10-0-1-2.ec2.internal/x",
		"aws:///us-east-1a/i-0123456789ABCDEF0", "aws://us-east-1a/i-01234567", "aws:////i-01234567", "aws:///z/",
		"gce://p/z/n", "", "aws:///z z/i-01234567", "aws:///us-east-1a/i-placeholder--1", "aws:///z/i-placeholder-a-b-99999999999999999999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		zone, instance, err := ParseProviderID(id)
		if err != nil {
			if !strings.Contains(err.Error(), "providerID") {
				t.Fatalf("error %q does not say what it is about", err)
			}
			return
		}
		if zone == "" || instance == "" || ProviderID(zone, instance) != id {
			t.Fatalf("%q read as zone %q, instance %q", id, zone, instance)
		}
	})
}

// FuzzTemplateFromTags feeds an Auto Scaling Group's name and node-template
// tags (labels, taints, resources, options, the EKS node group): no input
// panics, bad tags are left out with a warning, and the template node
// carries only what the API server would accept on a Node, and options in
// their ranges.
func FuzzTemplateFromTags(f *testing.F) {
	for _, seed := range []struct{ asg, key, value string }{
		{"workers", "team", "blue"},
		{"eks-ng-2a4b9f3c-12ab-34cd-56ef-7890abcdef12", "dedicated", "gpu:NoSchedule"},
		{"workers_Blue", "example.com/drain", ":PreferNoSchedule"},
		{"a", "bad key!", "x"},
		{"a", "ephemeral-storage", "50Gi"},
		{"a", "hugepages-2Mi", "-1"},
		{"a", "scaledownutilizationthreshold", "NaN"},
		{"a", "scaleDownGpuUtilizationThreshold", "0.2"},
		{"a", "scaledownunneededtime", "-5m"},
		{"a", "maxnodeprovisiontime", "2562047h47m16.854775808s"},
		{"a", "ignoredaemonsetsutilization", "TRUE"},
		{strings.Repeat("x", 300), "k", "v:NoExecute"},
		{"", "", ""},
		{"Ünïcode group", "kubernetes.io/os", "linux"},
		{".0", "k", "v"}, // once gave the node name "template-node-for-.0"
		{"a", "k", strings.Repeat("v", 64) + ":NoSchedule"},
	} {
		f.Add(seed.asg, seed.key, seed.value)
	}
	f.Fuzz(func(t *testing.T, asg, key, value string) {
		tags := map[string]string{LabelTagPrefix + key: value, TaintTagPrefix + key: value, ResourceTagPrefix + key: value,
			OptionTagPrefix + key: value, eksNodegroupTag: value}
		node, _, err := buildTemplate(templateInput{ASG: asg, Region: "us-east-1", Zones: []string{"us-east-1a"}, Tags: tags,
			Spec:         launchSpec{InstanceType: "m5.large"},
			InstanceType: &instanceTypeInfo{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, Architectures: []string{"x86_64"}, MaxENIs: 3, IPv4PerENI: 10},
			Reservation:  NodeReservationEKS})
		if err != nil {
			t.Fatalf("template of %q with tags %v: %v", asg, tags, err)
		}
		checkTemplateNode(t, node)
		defaults := cloudprovider.NodeGroupAutoscalingOptions{ScaleDownUtilizationThreshold: 0.5, ScaleDownGpuUtilizationThreshold: 0.5,
			ScaleDownUnneededTime: 10 * time.Minute, ScaleDownUnreadyTime: 20 * time.Minute, MaxNodeProvisionTime: 15 * time.Minute}
		opts, _, _ := optionsFromTags(tags, defaults)
		for _, v := range []float64{opts.ScaleDownUtilizationThreshold, opts.ScaleDownGpuUtilizationThreshold} {
			if math.IsNaN(v) || v < 0 || v > 1 {
				t.Fatalf("tag %q=%q gives a utilization threshold of %v", key, value, v)
			}
		}
		if opts.ScaleDownUnneededTime < 0 || opts.ScaleDownUnreadyTime < 0 || opts.MaxNodeProvisionTime < 0 {
			t.Fatalf("tag %q=%q gives negative durations: %+v", key, value, opts)
		}
	})
}

// checkTemplateNode fails t when node has a name, label, taint or quantity
// a Node could not have.
func checkTemplateNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	if msgs := validation.IsDNS1123Subdomain(node.Name); len(msgs) > 0 {
		t.Fatalf("template node name %q: %v", node.Name, msgs)
	}
	for k, v := range node.Labels {
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			t.Fatalf("label %q=%q: %v", k, v, msgs)
		}
	}
	for _, taint := range node.Spec.Taints {
		msgs := validation.IsQualifiedName(taint.Key)
		if taint.Value != "" {
			msgs = append(msgs, validation.IsValidLabelValue(taint.Value)...)
		}
		if len(msgs) > 0 {
			t.Fatalf("taint %v: %v", taint, msgs)
		}
	}
	for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		for name, q := range list {
			if q.Sign() < 0 || len(validation.IsQualifiedName(string(name))) > 0 {
				t.Fatalf("resource %s: %s", name, q.String())
			}
		}
	}
}

// FuzzParsePriceTable feeds --aws-price-table files: no input panics and
// every price accepted is a finite, non-negative number for a named type.
func FuzzParsePriceTable(f *testing.F) {
	for _, seed := range []string{"m5.large: 0.096\nm5.xlarge: 0.192\n", `{"t3.medium": 0.0416}`, "", "m5.large: cheap",
		"m5.large: -1", "- m5.large", "m5.large: .nan", "m5.large: .inf", "'': 1", "m5.large: 1e308\nm5.large: 2", "~: 1", "{"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		table, err := ParsePriceTable(raw)
		if err != nil {
			return
		}
		if len(table) == 0 {
			t.Fatalf("%q parsed without error to no prices", raw)
		}
		for typ, p := range table {
			if typ == "" || math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
				t.Fatalf("%q accepted with %q: %v", raw, typ, p)
			}
		}
	})
}
