package benchgen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pendingGroups draws the G pending groups.
func (b *builder) pendingGroups() []PendingGroup {
	groups := make([]PendingGroup, b.p.G)
	for g := range groups {
		groups[g] = b.pendingGroup(g)
	}
	return groups
}

// pendingGroup draws pending group g: its size, requests and constraints.
func (b *builder) pendingGroup(g int) PendingGroup {
	cpus := [...]int64{500, 1000, 2000, 3000, 4000}
	mems := [...]int64{256, 512, 1024, 2048, 4096, 8192}
	pg := PendingGroup{
		Index:    g,
		App:      pendingApp(g),
		Count:    groupSize(b.p.P, b.p.G, g),
		CPUMilli: cpus[b.rng.u(streamPending, g, 0, int64(len(cpus)))],
		MemoryMi: mems[b.rng.u(streamPending, g, 1, int64(len(mems)))],
	}
	switch g % 10 {
	case 0, 1:
		pg.Zone = zoneName(int(b.rng.u(streamPending, g, 2, 3)))
	case 2:
		pg.Toleration = true
	case 3:
		pg.AntiAffinity = true
	}
	return pg
}

// pendingPods builds the pods of every pending group, in (g,x) order.
func (b *builder) pendingPods(groups []PendingGroup) []*corev1.Pod {
	arena := newPodArena(b.p.P)
	pods := make([]*corev1.Pod, 0, b.p.P)
	for _, pg := range groups {
		rs := rsName(pg.App)
		for x := range pg.Count {
			i := len(pods)
			p := arena.pod(b, i, pendingPodName(pg.Index, x), pg.App, rs, requests(pg.CPUMilli, pg.MemoryMi))
			b.constrain(p, pg)
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{
				Type:               corev1.PodScheduled,
				Status:             corev1.ConditionFalse,
				Reason:             unschedulable,
				LastTransitionTime: b.ts,
			}}
			pods = append(pods, p)
		}
	}
	return pods
}

// constrain adds the scheduling constraints of group pg to pod p.
func (b *builder) constrain(p *corev1.Pod, pg PendingGroup) {
	if pg.Zone != "" {
		p.Spec.NodeSelector = map[string]string{LabelZone: pg.Zone}
	}
	if pg.Toleration {
		p.Spec.Tolerations = []corev1.Toleration{dedicatedToleration()}
	}
	if pg.AntiAffinity {
		p.Spec.Affinity = antiAffinity(pg.App)
	}
}

// antiAffinity returns a required anti-affinity of the pods labelled
// app=<app> with each other, per hostname.
func antiAffinity(app string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelApp: app}},
			TopologyKey:   LabelHostname,
		}},
	}}
}
