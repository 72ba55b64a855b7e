package benchgen

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeGroup describes one generated node group and the node it would add.
type NodeGroup struct {
	ID         string        // ng-XX
	MinSize    int           // always 0
	MaxSize    int           // Params.NGMax
	TargetSize int           // number of generated nodes in the group
	Template   *corev1.Node  // template-node-for-ng-XX, no pods
	Zone       string        // topology.kubernetes.io/zone of its nodes
	Taint      *corev1.Taint // the dedicated taint, or nil
}

// PendingGroup describes the pods of one pending ReplicaSet (one group g).
type PendingGroup struct {
	Index        int    // g
	App          string // value of the app label, pend-GGG
	Count        int    // number of pending pods (may be 0)
	CPUMilli     int64  // cpu request of each pod, in millicores
	MemoryMi     int64  // memory request of each pod, in MiB
	Zone         string // required zone (nodeSelector), "" when none
	Toleration   bool   // whether the pods tolerate the dedicated taint
	AntiAffinity bool   // whether the pods repel each other per hostname
}

// Cluster is a generated benchmark cluster. Every object is freshly
// allocated and owned by the caller; no maps or pointers are shared between
// objects.
type Cluster struct {
	Params        Params
	NodeGroups    []NodeGroup
	Nodes         []*corev1.Node // ordered by j
	NodeUtil      []int          // utilization % drawn for Nodes[j]
	RunningPods   []*corev1.Pod  // ordered by (j,q)
	PendingGroups []PendingGroup // ordered by g
	PendingPods   []*corev1.Pod  // ordered by (g,x)
	ReplicaSets   []*appsv1.ReplicaSet
}

// builder carries what every generation step needs.
type builder struct {
	p   Params
	rng rng
	ts  metav1.Time
}

// Generate builds the cluster described by p. It panics if p is invalid
// (see Params.Validate); the presets are always valid.
func Generate(p Params) *Cluster {
	if err := p.Validate(); err != nil {
		panic("benchgen: invalid params: " + err.Error())
	}
	b := &builder{p: p, rng: rng{seed: p.Seed}, ts: creationTime()}
	c := &Cluster{Params: p}
	c.NodeGroups = b.nodeGroups()
	c.Nodes, c.NodeUtil = b.nodes(c.NodeGroups)
	var appPods []int
	c.RunningPods, appPods = b.runningPods(c.NodeGroups, c.Nodes, c.NodeUtil)
	c.PendingGroups = b.pendingGroups()
	c.PendingPods = b.pendingPods(c.PendingGroups)
	c.ReplicaSets = b.replicaSets(appPods, c.PendingGroups)
	return c
}
