package benchgen

import corev1 "k8s.io/api/core/v1"

// runningApps holds the names shared by the pods of each running app.
type runningApps struct {
	app []string // run-AAA
	rs  []string // rs-run-AAA
}

// newRunningApps names the Apps running apps.
func newRunningApps(n int) runningApps {
	r := runningApps{app: make([]string, n), rs: make([]string, n)}
	for a := range n {
		r.app[a] = runningApp(a)
		r.rs[a] = rsName(r.app[a])
	}
	return r
}

// runningPods builds the M pods bound to every node, and counts the pods
// of every running app.
func (b *builder) runningPods(groups []NodeGroup, nodes []*corev1.Node, util []int) ([]*corev1.Pod, []int) {
	m := b.p.M
	apps := newRunningApps(b.p.Apps)
	counts := make([]int, b.p.Apps)
	arena := newPodArena(len(nodes) * m)
	pods := make([]*corev1.Pod, len(nodes)*m)
	for j, node := range nodes {
		k := j % b.p.K
		for q := range m {
			i := j*m + q
			a := int(b.rng.u(streamRunning, i, 2, int64(b.p.Apps)))
			counts[a]++
			p := arena.pod(b, i, runningPodName(j, q), apps.app[a], apps.rs[a], b.runningRequests(i, k, util[j]))
			p.Spec.NodeName = node.Name
			if groups[k].Taint != nil {
				p.Spec.Tolerations = []corev1.Toleration{dedicatedToleration()}
			}
			p.Status.Phase = corev1.PodRunning
			pods[i] = p
		}
	}
	return pods, counts
}

// runningRequests draws the requests of running pod i on a node of group k
// with utilization u%.
func (b *builder) runningRequests(i, k, u int) corev1.ResourceList {
	j := int64(b.p.Jitter)
	jc := 100 - j + b.rng.u(streamRunning, i, 0, 2*j+1)
	jm := 100 - j + b.rng.u(streamRunning, i, 1, 2*j+1)
	s := groupShape(k)
	div := 10000 * int64(b.p.M)
	cpu := max(1, s.cpuMilli*int64(u)*jc/div)
	mem := max(1, s.memMi*int64(u)*jm/div)
	return requests(cpu, mem)
}
