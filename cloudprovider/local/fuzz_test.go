package local

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// FuzzParseConfig feeds --local-node-groups files: no input panics, and
// every group accepted makes Nodes the API server would accept (name,
// labels, taints) whose providerID reads back to the group and the node.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"nodeGroups:\n- {name: general-a, minSize: 1, maxSize: 10, zone: zone-a, instanceType: standard-4, cpu: '4', memory: 16Gi}\n",
		"nodeGroups:\n- name: gpu\n  maxSize: 2\n  zone: z\n  cpu: 8\n  memory: 64Gi\n  pods: 58\n  labels: {team: ml, example.com/accelerator: a100}\n" +
			"  taints: [{key: nvidia.com/gpu, value: 'true', effect: NoSchedule}]\n  pricePerHour: 2.5\n  provisioningDelay: 30s\n  fault: out-of-capacity\n",
		"nodeGroups: []",
		"nodeGroups:\n- {name: Bad_Name, maxSize: 1, zone: z, cpu: 1, memory: 1Gi}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: z, cpu: 1, memory: 1Gi, labels: {'bad key!': x}}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: 'zone a', cpu: 1, memory: 1Gi}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: z, instanceType: 'm5 large', cpu: 1, memory: 1Gi}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: z, cpu: 1, memory: 1Gi, taints: [{key: '', effect: NoSchedule}]}\n",
		"nodeGroups:\n- {name: " + strings.Repeat("a", 63) + ", maxSize: 1, zone: z, cpu: 1, memory: 1Gi}\n",
		"nodeGroups:\n- {name: " + strings.Repeat("a", 45) + ", maxSize: 1, zone: z, cpu: 1, memory: 1Gi}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: z, cpu: 1, memory: 1Gi, provisioningDelay: 2562048h}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: z, cpu: 1, memory: 1Gi, pricePerHour: .nan}\n",
		"nodeGroups:\n- {name: a, minSize: 2, maxSize: 1, zone: z, cpu: 1, memory: 1Gi}\n",
		"nodeGroups:\n- {name: a, maxSize: 1, zone: z, cpu: 1, memory: 1Gi, colour: red}\n",
		"{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return
		}
		for _, g := range cfg.NodeGroups {
			if p := g.PricePerHour; p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0) || *p <= 0) || g.ProvisioningDelay.Duration < 0 {
				t.Fatalf("group %q accepted with price %v and provisioning delay %v", g.Name, ptr.Deref(p, -1), g.ProvisioningDelay)
			}
			for _, n := range []int{1, 99999, 1e11} {
				checkNode(t, g, buildNode(g, nodeName(g.Name, n)))
			}
			checkNode(t, g, buildNode(g, templateNodeName(g.Name)))
		}
	})
}

// checkNode fails t when node is not what the API server accepts or its
// providerID does not lead back to g.
func checkNode(t *testing.T, g GroupSpec, node *corev1.Node) {
	t.Helper()
	if msgs := validation.IsDNS1123Subdomain(node.Name); len(msgs) > 0 {
		t.Fatalf("group %q: node name %q: %v", g.Name, node.Name, msgs)
	}
	for k, v := range node.Labels {
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			t.Fatalf("group %q: label %q=%q: %v", g.Name, k, v, msgs)
		}
	}
	for _, taint := range node.Spec.Taints {
		msgs := validation.IsQualifiedName(taint.Key)
		if taint.Value != "" {
			msgs = append(msgs, validation.IsValidLabelValue(taint.Value)...)
		}
		if len(msgs) > 0 {
			t.Fatalf("group %q: taint %v: %v", g.Name, taint, msgs)
		}
	}
	if group, name, ok := parseProviderID(node.Spec.ProviderID); !ok || group != g.Name || name != node.Name {
		t.Fatalf("providerID %q reads back as %q, %q, %v", node.Spec.ProviderID, group, name, ok)
	}
}

// FuzzParseProviderID feeds providerIDs as Nodes carry them: no input
// panics and what is accepted is exactly what providerID writes.
func FuzzParseProviderID(f *testing.F) {
	for _, seed := range []string{"local:///general-a/general-a-00001", "local:///g/", "local:////n", "local:///g/n/x",
		"aws:///us-east-1a/i-0123456789abcdef0", "local://g/n", "", "local:///g/n\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		group, name, ok := parseProviderID(id)
		if ok && (group == "" || name == "" || providerID(group, name) != id) {
			t.Fatalf("%q read as group %q, node %q", id, group, name)
		}
	})
}
