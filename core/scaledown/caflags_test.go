package scaledown

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// gpuNode adds a node of 8 cpu and gpus GPUs.
func (c *cluster) gpuNode(name string, gpus int64) {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"), GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res}}
	if _, err := c.snap.AddNode(n); err != nil {
		c.t.Fatal(err)
	}
}

func withGPUs(n int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[GPUResource] = *resource.NewQuantity(n, resource.DecimalSI)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: *resource.NewQuantity(n, resource.DecimalSI)}
	}
}

// The Cluster Autoscaler flags of the scale-down decision:
// --scale-down-unready-enabled, --scale-down-non-empty-candidates-count and
// --scale-down-gpu-utilization-threshold.
func TestScaleDownCAFlags(t *testing.T) {
	tests := []struct {
		name  string
		setup func(c *cluster) []string
		edit  func(*Input)
		// want are the unneeded nodes; reasons, by node, the start of why
		// a node stays.
		want    []string
		reasons map[string]string
	}{
		{"unready node, unready scale-down enabled", func(c *cluster) []string {
			c.node("sick", "4")
			c.node("spare", "4")
			c.pod("sick", "web", "3", nil)
			return []string{"sick"}
		}, func(in *Input) { in.Candidates[0].Unready = true }, []string{"sick"}, nil},
		{"unready node, --scale-down-unready-enabled=false", func(c *cluster) []string {
			c.node("sick", "4")
			c.node("spare", "4")
			c.pod("sick", "web", "1", nil)
			return []string{"sick"}
		}, func(in *Input) { in.Candidates[0].Unready = true; in.KeepUnready = true }, nil,
			map[string]string{"sick": "ScaleDownUnreadyDisabled"}},
		{"ready nodes, --scale-down-unready-enabled=false", func(c *cluster) []string {
			c.node("a", "4")
			c.node("spare", "4")
			c.pod("a", "web", "1", nil)
			return []string{"a"}
		}, func(in *Input) { in.KeepUnready = true }, []string{"a"}, nil},
		{"non-empty nodes up to the count, empty ones all", func(c *cluster) []string {
			c.node("big", "16")
			for _, n := range []string{"n1", "n2", "n3"} {
				c.node(n, "4")
				c.pod(n, "web", "500m", nil)
			}
			c.node("e1", "4")
			c.node("e2", "4")
			return []string{"n1", "n2", "n3", "e1", "e2"}
		}, func(in *Input) { in.MaxNonEmptyUnneeded = 2 }, []string{"e1", "e2", "n1", "n2"}, nil},
		{"non-empty count 0: no bound", func(c *cluster) []string {
			c.node("big", "16")
			for _, n := range []string{"n1", "n2", "n3"} {
				c.node(n, "4")
				c.pod(n, "web", "500m", nil)
			}
			return []string{"n1", "n2", "n3"}
		}, nil, []string{"n1", "n2", "n3"}, nil},
		{"GPU node judged by GPUs: busy cpu, idle GPUs", func(c *cluster) []string {
			c.gpuNode("gpu", 4)
			c.node("spare", "16")
			c.pod("gpu", "cpu-heavy", "6", nil)
			return []string{"gpu"}
		}, nil, []string{"gpu"}, nil},
		{"GPU node judged by GPUs: idle cpu, busy GPUs", func(c *cluster) []string {
			c.gpuNode("gpu", 4)
			c.gpuNode("other", 4)
			c.pod("gpu", "train", "100m", withGPUs(3))
			return []string{"gpu"}
		}, nil, nil, map[string]string{"gpu": "NotUnderutilized: GPU utilization 0.75 is not below 0.50"}},
		{"GPU threshold of its own", func(c *cluster) []string {
			c.gpuNode("gpu", 4)
			c.gpuNode("other", 4)
			c.pod("gpu", "train", "100m", withGPUs(3))
			return []string{"gpu"}
		}, func(in *Input) { in.Candidates[0].GPUThreshold = 0.8 }, []string{"gpu"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			cands := tc.setup(c)
			plan := c.plan(cands, func(in *Input) {
				for i := range in.Candidates {
					in.Candidates[i].GPUThreshold = 0.5
				}
				if tc.edit != nil {
					tc.edit(in)
				}
			})
			got := unneeded(plan)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("unneeded %v, want %v (unremovable %v)", got, tc.want, plan.Unremovable)
			}
			for node, want := range tc.reasons {
				if r := reasonOf(plan, node); !strings.HasPrefix(r, want) {
					t.Errorf("%s stays for %q, want %q", node, r, want)
				}
			}
		})
	}
}

// --ignore-daemonsets-utilization and --ignore-mirror-pods-utilization leave
// out their own kind of pod only.
func TestIgnoredInUtilization(t *testing.T) {
	c := newCluster(t)
	c.node("n", "4")
	c.pod("n", "web", "1", nil)
	c.pod("n", "agent", "1", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
	})
	c.pod("n", "static", "1", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} })
	ni := c.snap.NodeInfo("n")
	tests := []struct {
		ig   Ignored
		want float64
	}{
		{Ignored{}, 0.75},
		{Ignored{DaemonSets: true}, 0.5},
		{Ignored{MirrorPods: true}, 0.5},
		{Ignored{DaemonSets: true, MirrorPods: true}, 0.25},
	}
	for _, tc := range tests {
		if got := Utilization(ni, tc.ig); got != tc.want {
			t.Errorf("%+v: utilization %v, want %v", tc.ig, got, tc.want)
		}
	}
}
