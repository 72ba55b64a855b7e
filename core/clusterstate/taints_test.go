package clusterstate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

var flagTaints = Taints{Startup: []string{"gpu-driver", "ignored"}, Status: []string{"maintenance"}}

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect}
}

// readyNode is a node as the API server stores it once the kubelet reported
// Ready: a heartbeat, the not-ready taint gone.
func readyNode(taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "812"},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
		}},
	}
}

func TestReadinessCountsStartupTaintsAsNotReady(t *testing.T) {
	notReady := readyNode(taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule))
	notReady.Status.Conditions[1].Status = corev1.ConditionFalse
	unknown := readyNode(taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute))
	unknown.Status.Conditions[1].Status = corev1.ConditionUnknown
	noCondition := readyNode()
	noCondition.Status.Conditions = nil
	tests := []struct {
		name    string
		node    *corev1.Node
		ready   bool
		wantWhy string
	}{
		{"ready, untainted", readyNode(), true, ""},
		{"ready, a taint of its own", readyNode(taint("dedicated", corev1.TaintEffectNoSchedule)), true, ""},
		{"Ready but the not-ready taint not yet removed", readyNode(taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)),
			false, "startup taint node.kubernetes.io/not-ready:NoSchedule"},
		{"Ready, heartbeat back, unreachable still on", readyNode(taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule)), false, "unreachable"},
		{"network not set up", readyNode(taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, "network-unavailable"},
		{"cloud not initialized", readyNode(taint(TaintCloudUninitialized, corev1.TaintEffectNoSchedule)), false, "uninitialized"},
		{"startup prefix", readyNode(taint(StartupTaintPrefix+"cni", corev1.TaintEffectNoExecute)), false, StartupTaintPrefix + "cni"},
		{"ignore prefix", readyNode(taint(IgnoreTaintPrefix+"x", corev1.TaintEffectPreferNoSchedule)), false, IgnoreTaintPrefix + "x"},
		{"--startup-taint", readyNode(taint("gpu-driver", corev1.TaintEffectNoSchedule)), false, "gpu-driver"},
		{"--ignore-taint", readyNode(taint("ignored", corev1.TaintEffectNoSchedule)), false, "ignored"},
		{"a status taint keeps it ready", readyNode(taint(StatusTaintPrefix+"upgrade", corev1.TaintEffectNoSchedule)), true, ""},
		{"--status-taint keeps it ready", readyNode(taint("maintenance", corev1.TaintEffectNoSchedule)), true, ""},
		{"pressure keeps it ready", readyNode(taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)), true, ""},
		{"cordoned keeps it ready", readyNode(taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), true, ""},
		{"NotReady", notReady, false, "Ready condition is False"},
		{"Unknown", unknown, false, "Ready condition is Unknown"},
		{"no Ready condition yet", noCondition, false, "no Ready condition"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready, why := flagTaints.Readiness(tc.node)
			if ready != tc.ready || !strings.Contains(why, tc.wantWhy) || ready && why != "" {
				t.Fatalf("Readiness = %v, %q; want %v, %q", ready, why, tc.ready, tc.wantWhy)
			}
		})
	}
}

func TestForTemplateKeepsOnlyTaintsANewNodeKeeps(t *testing.T) {
	own := []corev1.Taint{
		{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule},
		{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoExecute},
	}
	transient := []corev1.Taint{
		taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute),
		taint(TaintCloudUninitialized, corev1.TaintEffectNoSchedule),
		taint(TaintCloudShutdown, corev1.TaintEffectNoSchedule),
		taint(StartupTaintPrefix+"cni", corev1.TaintEffectNoSchedule),
		taint(IgnoreTaintPrefix+"x", corev1.TaintEffectNoSchedule),
		taint(StatusTaintPrefix+"y", corev1.TaintEffectNoSchedule),
		taint("gpu-driver", corev1.TaintEffectNoSchedule),
		taint("ignored", corev1.TaintEffectNoSchedule),
		taint("maintenance", corev1.TaintEffectNoSchedule),
	}
	all := append(append([]corev1.Taint{}, transient[:4]...), own[0])
	all = append(append(all, transient[4:]...), own[1])
	before := append([]corev1.Taint(nil), all...)
	if got := flagTaints.ForTemplate(all); !reflect.DeepEqual(got, own) {
		t.Fatalf("ForTemplate kept %v, want only %v", got, own)
	}
	if !reflect.DeepEqual(all, before) {
		t.Fatal("ForTemplate changed its input")
	}
	if got := (Taints{}).ForTemplate(nil); got != nil {
		t.Fatalf("ForTemplate(nil) = %v", got)
	}
}

func TestReadyNodeWithAStartupTaintIsUpcoming(t *testing.T) {
	tainted := readyNode(taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule))
	tainted.Name, tainted.CreationTimestamp = "g-1", metav1.NewTime(t0.Add(-30*time.Second))
	clean := readyNode()
	clean.Name, clean.CreationTimestamp = "g-0", metav1.NewTime(t0.Add(-time.Hour))
	tr := New(opts)
	tr.Update(t0, []GroupObservation{{ID: "g", Target: 2,
		Instances: []cloudprovider.Instance{inst("p0", cloudprovider.InstanceRunning, nil), inst("p1", cloudprovider.InstanceRunning, nil)},
		Nodes:     map[string]NodeObservation{"p0": flagTaints.Observe(clean), "p1": flagTaints.Observe(tainted)},
	}})
	if v := tr.Group("g"); v.Upcoming != 1 || v.Ready != 1 || v.Registered != 2 {
		t.Fatalf("view %+v: want the tainted node upcoming (1 ready, 1 upcoming, 2 registered)", v)
	}
	h := tr.UpdateHealth(t0, []NodeObservation{flagTaints.Observe(clean), flagTaints.Observe(tainted)})
	if !h.Healthy || h.Ready != 1 || h.NotStarted != 1 || h.Unready != 0 {
		t.Fatalf("health %+v: want the tainted node counted as starting", h)
	}
}

// A node with the provider's GPU label is not ready until its GPUs are
// allocatable; without the label, or without a provider label, GPUs do not
// matter.
func TestGPUNodeIsNotReadyUntilItsGPUsAreAllocatable(t *testing.T) {
	const label = "k8s.amazonaws.com/accelerator"
	gpuNode := func(labelled bool, gpus string) *corev1.Node {
		n := readyNode()
		if labelled {
			n.Labels = map[string]string{label: "nvidia-tesla-t4"}
		}
		if gpus != "" {
			n.Status.Allocatable = corev1.ResourceList{cloudprovider.ResourceNvidiaGPU: resource.MustParse(gpus)}
		}
		return n
	}
	withLabel := Taints{GPULabel: label}
	for _, tc := range []struct {
		name      string
		c         Taints
		node      *corev1.Node
		wantReady bool
	}{
		{"labelled, no GPU resource yet", withLabel, gpuNode(true, ""), false},
		{"labelled, zero GPUs", withLabel, gpuNode(true, "0"), false},
		{"labelled, GPUs allocatable", withLabel, gpuNode(true, "1"), true},
		{"not labelled, no GPUs", withLabel, gpuNode(false, ""), true},
		{"provider without a GPU label", Taints{}, gpuNode(true, ""), true},
	} {
		ready, why := tc.c.Readiness(tc.node)
		if ready != tc.wantReady {
			t.Errorf("%s: ready %v (%q), want %v", tc.name, ready, why, tc.wantReady)
		}
		if !ready && !strings.Contains(why, label) {
			t.Errorf("%s: reason %q does not name the label", tc.name, why)
		}
	}
}
