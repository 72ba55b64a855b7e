package simulator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Snapshot is the cluster as the scheduler sees it: nodes with the pods
// bound to them, kept as the scheduler framework's NodeInfos so its plugins
// run on it unchanged.
//
// What-if questions use Fork, then changes, then Revert: every change after
// a Fork is logged and undone by Revert, so asking costs what the change
// costs, never a copy of the cluster. Forks nest. Commit keeps the changes
// of the innermost fork.
//
// A Snapshot is not safe for concurrent use.
type Snapshot struct {
	infos []fwk.NodeInfo
	index map[string]int

	// withAffinity and withAntiAffinity cache the nodes that hold pods with
	// (anti-)affinity terms; nil means recompute.
	withAffinity     []fwk.NodeInfo
	withAntiAffinity []fwk.NodeInfo
	affinityValid    bool

	pvcUsers map[string]int
	// labels indexes the pods by the label keys affinity terms ask for.
	labels podLabels

	undo  []undoEntry
	marks []int
	// version counts changes made outside any fork; journal remembers
	// the last of them.
	version uint64
	journal journal
}

type undoKind int

const (
	undoAddNode undoKind = iota
	undoRemoveNode
	undoAddPod
	undoRemovePod
)

type undoEntry struct {
	kind  undoKind
	node  *framework.NodeInfo
	pod   fwk.PodInfo
	index int
}

var _ fwk.SharedLister = (*Snapshot)(nil)

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{index: map[string]int{}, pvcUsers: map[string]int{}, labels: podLabels{}}
}

// NodeInfo returns the named node's info, or nil.
func (s *Snapshot) NodeInfo(name string) *framework.NodeInfo {
	if i, ok := s.index[name]; ok {
		return s.infos[i].(*framework.NodeInfo)
	}
	return nil
}

// Len is the number of nodes.
func (s *Snapshot) Len() int { return len(s.infos) }

// Infos lists the nodes in snapshot order. The slice must not be changed.
func (s *Snapshot) Infos() []fwk.NodeInfo { return s.infos }

// AddNode adds a node with no pods and returns its info.
func (s *Snapshot) AddNode(node *corev1.Node) (*framework.NodeInfo, error) {
	if _, exists := s.index[node.Name]; exists {
		return nil, fmt.Errorf("node %s is already in the snapshot", node.Name)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	s.index[node.Name] = len(s.infos)
	s.infos = append(s.infos, ni)
	s.log(undoEntry{kind: undoAddNode, node: ni})
	return ni, nil
}

// RemoveNode removes a node and its pods.
func (s *Snapshot) RemoveNode(name string) error {
	i, ok := s.index[name]
	if !ok {
		return fmt.Errorf("node %s is not in the snapshot", name)
	}
	ni := s.infos[i].(*framework.NodeInfo)
	s.detach(i)
	for _, p := range ni.Pods {
		s.trackPod(p, ni, -1)
	}
	s.log(undoEntry{kind: undoRemoveNode, node: ni, index: i})
	return nil
}

// detach takes the node at position i out of the list by swapping the last
// one into its place.
func (s *Snapshot) detach(i int) {
	last := len(s.infos) - 1
	name := s.infos[i].Node().Name
	s.infos[i] = s.infos[last]
	s.index[s.infos[i].Node().Name] = i
	s.infos[last] = nil
	s.infos = s.infos[:last]
	delete(s.index, name)
}

// attach puts ni back at position i, undoing detach.
func (s *Snapshot) attach(ni *framework.NodeInfo, i int) {
	s.infos = append(s.infos, ni)
	last := len(s.infos) - 1
	s.infos[i], s.infos[last] = s.infos[last], s.infos[i]
	s.index[s.infos[last].Node().Name] = last
	s.index[ni.Node().Name] = i
}

// AddPod binds a pod to a node in the snapshot.
func (s *Snapshot) AddPod(pi fwk.PodInfo, nodeName string) error {
	i, ok := s.index[nodeName]
	if !ok {
		return fmt.Errorf("pod %s/%s: node %s is not in the snapshot", pi.GetPod().Namespace, pi.GetPod().Name, nodeName)
	}
	ni := s.infos[i].(*framework.NodeInfo)
	ni.AddPodInfo(pi)
	s.trackPod(pi, ni, 1)
	s.log(undoEntry{kind: undoAddPod, node: ni, pod: pi})
	return nil
}

// RemovePod unbinds a pod from its node in the snapshot.
func (s *Snapshot) RemovePod(pod *corev1.Pod, nodeName string) error {
	ni := s.NodeInfo(nodeName)
	if ni == nil {
		return fmt.Errorf("pod %s/%s: node %s is not in the snapshot", pod.Namespace, pod.Name, nodeName)
	}
	var pi fwk.PodInfo
	for _, p := range ni.Pods {
		if p.GetPod().UID == pod.UID {
			pi = p
			break
		}
	}
	if pi == nil {
		return fmt.Errorf("pod %s/%s is not on node %s in the snapshot", pod.Namespace, pod.Name, nodeName)
	}
	if err := ni.RemovePod(klog.Background(), pod); err != nil {
		return err
	}
	s.trackPod(pi, ni, -1)
	s.log(undoEntry{kind: undoRemovePod, node: ni, pod: pi})
	return nil
}

// trackPod keeps the PVC users, the affinity caches and the label index
// in step with pi added to (sign 1) or removed from ni.
func (s *Snapshot) trackPod(pi fwk.PodInfo, ni *framework.NodeInfo, sign int) {
	pod := pi.GetPod()
	s.labels.track(pod, ni, sign)
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		s.affinityValid = false
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
			s.pvcUsers[key] += sign
			if s.pvcUsers[key] <= 0 {
				delete(s.pvcUsers, key)
			}
		}
	}
}

func (s *Snapshot) log(e undoEntry) {
	if len(s.marks) > 0 {
		s.undo = append(s.undo, e)
		return
	}
	s.version++
	s.journal.record(e, s.version)
}

// Version changes whenever the snapshot changes outside a fork: equal
// versions mean the same cluster, so results computed on it still hold.
func (s *Snapshot) Version() uint64 { return s.version }

// Touch marks an outside change made directly on a NodeInfo (such as a
// new Node object for an existing node).
func (s *Snapshot) Touch() {
	s.version++
	s.journal.reset(s.version)
}

// Fork starts a what-if: changes from now on can be undone with Revert.
func (s *Snapshot) Fork() { s.marks = append(s.marks, len(s.undo)) }

// Forked reports whether a fork is open.
func (s *Snapshot) Forked() bool { return len(s.marks) > 0 }

// Revert undoes every change since the innermost Fork.
func (s *Snapshot) Revert() {
	if len(s.marks) == 0 {
		return
	}
	mark := s.marks[len(s.marks)-1]
	s.marks = s.marks[:len(s.marks)-1]
	for i := len(s.undo) - 1; i >= mark; i-- {
		s.reverse(s.undo[i])
		s.undo[i] = undoEntry{}
	}
	s.undo = s.undo[:mark]
}

// Commit keeps the changes of the innermost fork; an enclosing fork can
// still revert them.
func (s *Snapshot) Commit() {
	if len(s.marks) == 0 {
		return
	}
	s.marks = s.marks[:len(s.marks)-1]
	if len(s.marks) == 0 {
		// The changes are now outside any fork.
		for _, e := range s.undo {
			s.version++
			s.journal.record(e, s.version)
		}
		clear(s.undo)
		s.undo = s.undo[:0]
	}
}

func (s *Snapshot) reverse(e undoEntry) {
	switch e.kind {
	case undoAddNode:
		s.detach(s.index[e.node.Node().Name])
	case undoRemoveNode:
		s.attach(e.node, e.index)
		for _, p := range e.node.Pods {
			s.trackPod(p, e.node, 1)
		}
	case undoAddPod:
		lastFirst(e.node, e.pod)
		_ = e.node.RemovePod(klog.Background(), e.pod.GetPod())
		s.trackPod(e.pod, e.node, -1)
	case undoRemovePod:
		e.node.AddPodInfo(e.pod)
		s.trackPod(e.pod, e.node, 1)
	}
}

// NodeInfos implements fwk.SharedLister.
func (s *Snapshot) NodeInfos() fwk.NodeInfoLister { return nodeInfoLister{s} }

// StorageInfos implements fwk.SharedLister.
func (s *Snapshot) StorageInfos() fwk.StorageInfoLister { return storageInfoLister{s} }

// PodGroupStates implements fwk.SharedLister. Pod groups (gang scheduling)
// are not simulated.
func (s *Snapshot) PodGroupStates() fwk.PodGroupStateLister { return podGroupStateLister{} }

func (s *Snapshot) affinityLists() ([]fwk.NodeInfo, []fwk.NodeInfo) {
	if !s.affinityValid {
		s.withAffinity, s.withAntiAffinity = s.withAffinity[:0], s.withAntiAffinity[:0]
		for _, ni := range s.infos {
			if len(ni.GetPodsWithAffinity()) > 0 {
				s.withAffinity = append(s.withAffinity, ni)
			}
			if len(ni.GetPodsWithRequiredAntiAffinity()) > 0 {
				s.withAntiAffinity = append(s.withAntiAffinity, ni)
			}
		}
		s.affinityValid = true
	}
	return s.withAffinity, s.withAntiAffinity
}

type nodeInfoLister struct{ s *Snapshot }

func (l nodeInfoLister) List() ([]fwk.NodeInfo, error) { return l.s.infos, nil }

func (l nodeInfoLister) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	a, _ := l.s.affinityLists()
	return a, nil
}

func (l nodeInfoLister) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	_, a := l.s.affinityLists()
	return a, nil
}

func (l nodeInfoLister) Get(name string) (fwk.NodeInfo, error) {
	if ni := l.s.NodeInfo(name); ni != nil {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not found in the snapshot", name)
}

type storageInfoLister struct{ s *Snapshot }

func (l storageInfoLister) IsPVCUsedByPods(key string) bool { return l.s.pvcUsers[key] > 0 }

type podGroupStateLister struct{}

func (podGroupStateLister) Get(namespace, name string) (fwk.PodGroupState, error) {
	return nil, fmt.Errorf("pod group %s/%s: pod groups are not simulated", namespace, name)
}

// lastFirst swaps pi, when it is the last pod of ni's lists (as the last
// pod added is, when changes are undone in reverse), with the first: the
// framework's RemovePod searches the lists from the front, one pod key
// compared for each pod, and puts the last pod in the removed one's place,
// so the lists end in their order before pi was added, found at once.
func lastFirst(ni *framework.NodeInfo, pi fwk.PodInfo) {
	for _, pods := range [][]fwk.PodInfo{ni.Pods, ni.PodsWithAffinity, ni.PodsWithRequiredAntiAffinity} {
		if n := len(pods); n > 1 && pods[n-1] == pi {
			pods[0], pods[n-1] = pods[n-1], pods[0]
		}
	}
}
