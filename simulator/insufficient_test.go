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
			c, gc, ni := podOnNode(t, tt.node, tt.pod, tt.placed)
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

// Shortfalls give the pre-check's reasons with the numbers: what the pod
// asks for and what the node's pods leave free.
func TestShortfallsCarryTheNumbers(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name   string
		node   func(*corev1.Node)
		pod    func(*corev1.Pod)
		placed int
		want   []string
	}{
		{name: "cpu taken by the pods there", pod: requests(corev1.ResourceCPU, q("1500m")), placed: 2,
			want: []string{"Insufficient cpu (needs 1.5, free 1)"}},
		{name: "more than the node has", pod: func(p *corev1.Pod) {
			requests(corev1.ResourceCPU, q("5"))(p)
			requests(corev1.ResourceMemory, q("17Gi"))(p)
		}, want: []string{"Insufficient cpu (needs 5, free 4)", "Insufficient memory (needs 17Gi, free 16Gi)"}},
		{name: "memory partly used", pod: func(p *corev1.Pod) {
			requests(corev1.ResourceCPU, q("100m"))(p)
			requests(corev1.ResourceMemory, q("6Gi"))(p)
		}, placed: 2, want: []string{"Insufficient memory (needs 6Gi, free 4Gi)"}},
		{name: "no pod slot left", node: capacity(corev1.ResourcePods, q("2")), pod: requests(corev1.ResourceCPU, q("100m")),
			placed: 2, want: []string{"Too many pods (2 of 2 used)"}},
		{name: "an extended resource the node lacks", pod: requests("example.com/gpu", q("2")),
			want: []string{"Insufficient example.com/gpu (needs 2, free 0)"}},
		{name: "room", pod: requests(corev1.ResourceCPU, q("1"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, gc, ni := podOnNode(t, tt.node, tt.pod, tt.placed)
			if got := gc.Shortfalls(ni); !slices.Equal(got, tt.want) {
				t.Errorf("shortfalls %q, want %q (the scheduler's reasons: %q)", got, tt.want, reasons(gc.Insufficient(ni)))
			}
		})
	}
}

// podOnNode is a 4-CPU, 16 GiB, 110-pod node changed by node, with placed
// copies of a 1-CPU pod changed by pod on it, and that pod's group check.
func podOnNode(t *testing.T, node func(*corev1.Node), pod func(*corev1.Pod), placed int) (*Checker, *GroupCheck, fwk.NodeInfo) {
	t.Helper()
	s := NewSnapshot()
	n := testNode("n", "4", "z")
	if node != nil {
		node(n)
	}
	ni, err := s.AddNode(n)
	if err != nil {
		t.Fatal(err)
	}
	p := testPod("web", "1")
	if pod != nil {
		pod(p)
	}
	for i := 0; i < placed; i++ {
		if err := s.AddPod(info(p.DeepCopy()), "n"); err != nil {
			t.Fatal(err)
		}
	}
	c := newTestChecker(t, s)
	gc, err := c.CheckGroup(context.Background(), &PodGroup{Pods: []*corev1.Pod{p}})
	if err != nil {
		t.Fatal(err)
	}
	return c, gc, ni
}
