package local

import (
	"strings"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

func TestDefaultConfigIsThreePoolsInTwoZones(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	zones := map[string]bool{}
	for _, g := range cfg.NodeGroups {
		zones[g.Zone] = true
	}
	if len(cfg.NodeGroups) != 3 || len(zones) != 2 {
		t.Fatalf("got %d groups in %d zones, want 3 in 2", len(cfg.NodeGroups), len(zones))
	}
}

func TestParseConfig(t *testing.T) {
	raw := `
nodeGroups:
- name: gpu
  minSize: 0
  maxSize: 4
  zone: zone-c
  instanceType: gpu-8
  cpu: "8"
  memory: 32Gi
  pods: 58
  labels: {accelerator: fake}
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  pricePerHour: 2.5
  provisioningDelay: 750ms
  fault: out-of-capacity
`
	cfg, err := ParseConfig([]byte(raw))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	g := cfg.NodeGroups[0]
	if g.Name != "gpu" || g.MaxSize != 4 || g.CPU.MilliValue() != 8000 || g.Memory.Value() != 32<<30 || g.Pods != 58 ||
		g.Labels["accelerator"] != "fake" || len(g.Taints) != 1 || g.Taints[0].Value != "gpu" ||
		g.PricePerHour == nil || *g.PricePerHour != 2.5 || g.ProvisioningDelay.Duration != 750*time.Millisecond || g.Fault != FaultOutOfCapacity {
		t.Fatalf("parsed group wrong: %+v", g)
	}
}

func TestParseConfigErrors(t *testing.T) {
	base := "nodeGroups:\n- {name: a, minSize: 0, maxSize: 2, zone: z, cpu: '1', memory: 1Gi%s}\n"
	tests := []struct {
		extra, wantErr string
	}{
		{", colour: red", `unknown field "colour"`},
		{", fault: meteor", `fault "meteor"`},
		{", provisioningDelay: soon", `invalid duration`},
		{", initialSize: 5", `initialSize 5 is outside [0, 2]`},
		{", taints: [{key: k, effect: Sometimes}]", `effect "Sometimes"`},
		{", pods: -1", `pods -1 is negative`},
		{", pricePerHour: 0", `pricePerHour 0 must be a positive number`},
		{", pricePerHour: -0.1", `pricePerHour -0.1 must be a positive number`},
		{", pricePerHour: .inf", `unsupported value: +Inf`},
		{", pricePerHour: cheap", `pricePerHour`},
	}
	for _, tc := range tests {
		t.Run(tc.wantErr, func(t *testing.T) {
			_, err := ParseConfig([]byte(strings.Replace(base, "%s", tc.extra, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := ParseConfig([]byte("nodeGroups:\n- {name: Bad_Name, maxSize: 1, zone: z, cpu: '1', memory: 1Gi}\n")); err == nil {
		t.Fatal("a name that is not a DNS label was accepted")
	}
	if _, err := ParseConfig([]byte("nodeGroups:\n- {name: a, minSize: 3, maxSize: 1, zone: z, cpu: '1', memory: 1Gi}\n")); err == nil ||
		!strings.Contains(err.Error(), "minSize 3 and maxSize 1") {
		t.Fatalf("min > max not reported: %v", err)
	}
}

func TestApplyNodeGroupFlags(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.ApplyNodeGroupFlags([]cloudprovider.NodeGroupSpec{{MinSize: 2, MaxSize: 3, Name: "general-b"}}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(cfg.NodeGroups) != 1 || cfg.NodeGroups[0].Name != "general-b" || cfg.NodeGroups[0].MinSize != 2 || cfg.NodeGroups[0].MaxSize != 3 {
		t.Fatalf("got %+v, want only general-b sized 2..3", cfg.NodeGroups)
	}
	err := DefaultConfig().ApplyNodeGroupFlags([]cloudprovider.NodeGroupSpec{{MinSize: 0, MaxSize: 3, Name: "nope"}})
	if err == nil || !strings.Contains(err.Error(), `no node group "nope"`) {
		t.Fatalf("unknown group not reported: %v", err)
	}
}

func TestProviderID(t *testing.T) {
	id := providerID("general-a", "general-a-00001")
	g, n, ok := parseProviderID(id)
	if !ok || g != "general-a" || n != "general-a-00001" {
		t.Fatalf("round trip of %q gave %q %q %v", id, g, n, ok)
	}
	for _, bad := range []string{"", "aws:///zone/i-123", "local:///", "local:///g", "local:///g/", "local:////n", "local:///g/n/x"} {
		if _, _, ok := parseProviderID(bad); ok {
			t.Errorf("parseProviderID(%q) accepted a malformed id", bad)
		}
	}
}

func TestBuildNode(t *testing.T) {
	g := DefaultConfig().NodeGroups[2]
	n := buildNode(g, "highmem-a-00007")
	if n.Labels["topology.kubernetes.io/zone"] != "zone-a" || n.Labels["node.kubernetes.io/instance-type"] != "highmem-8" ||
		n.Labels["kubernetes.io/hostname"] != "highmem-a-00007" || n.Labels[NodeGroupLabel] != "highmem-a" {
		t.Fatalf("labels wrong: %v", n.Labels)
	}
	if n.Status.Allocatable.Cpu().MilliValue() != 8000 || n.Status.Allocatable.Memory().Value() != 64<<30 || n.Status.Allocatable.Pods().Value() != 110 {
		t.Fatalf("allocatable wrong: %v", n.Status.Allocatable)
	}
	if n.Spec.ProviderID != "local:///highmem-a/highmem-a-00007" {
		t.Fatalf("providerID %q", n.Spec.ProviderID)
	}
	if num, ok := nodeNumber("highmem-a", n.Name); !ok || num != 7 {
		t.Fatalf("nodeNumber = %d %v", num, ok)
	}
}
