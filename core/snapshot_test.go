package core

import (
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

var heartbeat = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// statusNode is a node as a kubelet keeps it: conditions with heartbeat
// times, images, volumes in use, a resourceVersion.
func statusNode(name string) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Labels: map[string]string{corev1.LabelHostname: name},
		Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res}}
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure} {
		status := corev1.ConditionFalse
		if t == corev1.NodeReady {
			status = corev1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: status,
			LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(heartbeat)})
	}
	return n
}

// renewed is n after a routine status update: new heartbeat times, an
// image pulled, a volume in use, a new resourceVersion.
func renewed(n *corev1.Node, i int) *corev1.Node {
	n = n.DeepCopy()
	n.ResourceVersion = n.ResourceVersion + "1"
	for j := range n.Status.Conditions {
		n.Status.Conditions[j].LastHeartbeatTime = metav1.NewTime(heartbeat.Add(time.Duration(i) * 10 * time.Second))
	}
	n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{"registry.example/app:" + string(rune('a'+i))}})
	n.Status.VolumesInUse = append(n.Status.VolumesInUse, corev1.UniqueVolumeName("vol"))
	return n
}

func syncOrFail(t *testing.T, l *liveSnapshot) uint64 {
	t.Helper()
	s, err := l.Sync()
	if err != nil {
		t.Fatal(err)
	}
	return s.Version()
}

func TestSnapshotVersionStandsStillThroughHeartbeats(t *testing.T) {
	cases := []struct {
		name string
		edit func(*corev1.Node)
	}{
		{"a label", func(n *corev1.Node) { n.Labels["pool"] = "x" }},
		{"a taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("3") }},
		{"readiness", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }},
		{"an annotation", func(n *corev1.Node) { n.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] = "true" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveSnapshot()
			n := statusNode("n")
			l.recordNode(n, false)
			v := syncOrFail(t, l)
			for i := 1; i <= 3; i++ {
				n = renewed(n, i)
				l.recordNode(n, false)
				if got := syncOrFail(t, l); got != v {
					t.Fatalf("heartbeat %d moved the snapshot's version %d → %d", i, v, got)
				}
			}
			if l.snap.NodeInfo("n").Node() != n {
				t.Fatal("the snapshot does not hold the latest node object")
			}
			n = n.DeepCopy()
			tc.edit(n)
			l.recordNode(n, false)
			if got := syncOrFail(t, l); got == v {
				t.Fatalf("%s changed and the version stood still", tc.name)
			}
		})
	}
}

func TestSnapshotFollowsWhatPlansReadFromPods(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*corev1.Pod)
		moved bool
	}{
		{"readiness and IP", func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			p.Status.PodIP = "10.0.0.7"
		}, false},
		{"safe-to-evict", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		}, true},
		{"orphaned", func(p *corev1.Pod) { p.OwnerReferences = nil }, true},
		{"being deleted", func(p *corev1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = ptr.To(metav1.NewTime(heartbeat)), ptr.To[int64](30)
		}, true},
		{"resized in place", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveSnapshot()
			l.recordNode(statusNode("n"), false)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "default", UID: types.UID("web-x"), Generation: 1,
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			simtest.Admit(p, rand.New(rand.NewPCG(1, 1)))
			l.recordPod(p, false)
			v := syncOrFail(t, l)
			p = p.DeepCopy()
			p.ResourceVersion += "1"
			tc.edit(p)
			l.recordPod(p, false)
			if moved := syncOrFail(t, l) != v; moved != tc.moved {
				t.Fatalf("version moved %v, want %v", moved, tc.moved)
			}
			held := l.snap.NodeInfo("n").Pods[0].GetPod()
			if tc.moved && held != p {
				t.Fatal("the snapshot still holds the pod as it was before the change")
			}
		})
	}
}
