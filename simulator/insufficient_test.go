package simulator

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// The pre-check names what a node lacks as the scheduler's NodeResourcesFit
// plugin does, with the same status code: each case is checked against the
// plugin itself, run through the framework on the same node.
func TestInsufficientSpeaksAsTheScheduler(t *testing.T) {
	const gpu = corev1.ResourceName("example.com/gpu")
	q := resource.MustParse
	tests := []struct {
		name string
		// node changes a 4-CPU, 16 GiB, 110-pod node; pod a 1-CPU, 1 GiB pod.
		node      func(*corev1.Node)
		pod       func(*corev1.Pod)
		placed    int
		want      []string
		wantFinal bool
	}{
		{name: "more cpu than the node has", pod: requests(corev1.ResourceCPU, q("100")),
			want: []string{"Insufficient cpu"}, wantFinal: true},
		{name: "cpu taken by the pods there", pod: requests(corev1.ResourceCPU, q("1500m")), placed: 2,
			want: []string{"Insufficient cpu"}},
		{name: "memory", pod: requests(corev1.ResourceMemory, q("20Gi")), want: []string{"Insufficient memory"}, wantFinal: true},
		{name: "cpu and memory", pod: func(p *corev1.Pod) {
			requests(corev1.ResourceCPU, q("5"))(p)
			requests(corev1.ResourceMemory, q("17Gi"))(p)
		}, want: []string{"Insufficient cpu", "Insufficient memory"}, wantFinal: true},
		{name: "no pod slot left", node: capacity(corev1.ResourcePods, q("2")), pod: requests(corev1.ResourceCPU, q("100m")),
			placed: 2, want: []string{"Too many pods"}},
		{name: "a pod slot and cpu", node: capacity(corev1.ResourcePods, q("2")), pod: requests(corev1.ResourceCPU, q("3500m")),
			placed: 2, want: []string{"Too many pods", "Insufficient cpu"}},
		{name: "ephemeral storage", node: capacity(corev1.ResourceEphemeralStorage, q("10Gi")),
			pod: requests(corev1.ResourceEphemeralStorage, q("20Gi")), want: []string{"Insufficient ephemeral-storage"}, wantFinal: true},
		{name: "an extended resource the node lacks", pod: requests(gpu, q("1")), want: []string{"Insufficient example.com/gpu"}, wantFinal: true},
		{name: "an extended resource in use", node: capacity(gpu, q("1")), pod: requests(gpu, q("1")), placed: 1,
			want: []string{"Insufficient example.com/gpu"}},
		{name: "hugepages", pod: requests(corev1.ResourceHugePagesPrefix+"2Mi", q("2Mi")), want: []string{"Insufficient hugepages-2Mi"}, wantFinal: true},
		{name: "room", pod: requests(corev1.ResourceCPU, q("1"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := NewSnapshot()
			n := testNode("n", "4", "z")
			if tt.node != nil {
				tt.node(n)
			}
			ni, err := s.AddNode(n)
			if err != nil {
				t.Fatal(err)
			}
			pod := testPod("web", "1")
			if tt.pod != nil {
				tt.pod(pod)
			}
			for i := 0; i < tt.placed; i++ {
				if err := s.AddPod(info(pod.DeepCopy()), "n"); err != nil {
					t.Fatal(err)
				}
			}
			c := newTestChecker(t, s)
			gc, err := c.CheckGroup(ctx, &PodGroup{Pods: []*corev1.Pod{pod}})
			if err != nil {
				t.Fatal(err)
			}
			got, scheduler := c.Fits(ctx, gc, ni), c.Filter(ctx, gc.PodCheck, ni)
			if !slices.Equal(reasons(got), tt.want) || got.IsSuccess() != (len(tt.want) == 0) {
				t.Fatalf("reasons %q, want %q", reasons(got), tt.want)
			}
			if !slices.Equal(reasons(got), reasons(scheduler)) || got.Code() != scheduler.Code() {
				t.Fatalf("pre-check says %v %q, the scheduler's plugins %v %q", got.Code(), reasons(got), scheduler.Code(), reasons(scheduler))
			}
			if final := got.Code() == fwk.UnschedulableAndUnresolvable; len(tt.want) > 0 && final != tt.wantFinal {
				t.Fatalf("code %v: unresolvable %v, want %v", got.Code(), final, tt.wantFinal)
			}
			if gc.ResourcesFit(ni) != (len(tt.want) == 0) {
				t.Fatalf("ResourcesFit %v disagrees with the reasons %q", gc.ResourcesFit(ni), tt.want)
			}
		})
	}
}

func reasons(st *fwk.Status) []string {
	if st == nil {
		return nil
	}
	return st.Reasons()
}

// requests sets a request of the pod's container.
func requests(name corev1.ResourceName, v resource.Quantity) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[name] = v
	}
}

// capacity sets a node's capacity and allocatable of one resource.
func capacity(name corev1.ResourceName, v resource.Quantity) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Status.Capacity[name] = v
		n.Status.Allocatable[name] = v
	}
}
