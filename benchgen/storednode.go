package benchgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1defaults "k8s.io/kubernetes/pkg/apis/apps/v1"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
)

// Annotations a kubelet and the TTL controller put on every node.
const (
	annotationAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"
	annotationNodeTTL      = "node.alpha.kubernetes.io/ttl"
	kubeletPort            = 10250
)

// RegisterNode adds to generated node n what its kubelet sets when it
// registers the node: the attach-detach annotation.
func RegisterNode(n *corev1.Node) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[annotationAttachDetach] = "true"
}

// ReportNode adds to registered node n (node j of its cluster) the status
// its kubelet reports at time at (the four node conditions, addresses,
// daemon endpoints and node info; capacity and allocatable stay), and the
// TTL controller's annotation.
func ReportNode(n *corev1.Node, j int, at metav1.Time) {
	n.Annotations[annotationNodeTTL] = "0"
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: at,
			LastTransitionTime: n.CreationTimestamp}
	}
	n.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: NodeIP(j)},
		{Type: corev1.NodeHostName, Address: n.Name},
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = kubeletPort
	id := sha256.Sum256([]byte(n.Name))
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: hex.EncodeToString(id[:16]), SystemUUID: uuidOf(id[16:]), BootID: uuidOf(id[:16]),
		KernelVersion: "6.8.0-1024-aws", OSImage: "Ubuntu 24.04.2 LTS", ContainerRuntimeVersion: "containerd://2.0.5",
		KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64",
	}
}

// uuidOf formats 16 bytes as a UUID.
func uuidOf(b []byte) string {
	h := hex.EncodeToString(b[:16])
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}

// nodes stores the nodes: registered and reported by their kubelets.
func (s *storer) nodes() error {
	return storeEach(s, s.c.Nodes, func(j int, n *corev1.Node) error {
		RegisterNode(n)
		corev1defaults.SetObjectDefaults_Node(n)
		s.meta(&n.ObjectMeta, uidNode, j, 0)
		created := n.DeepCopy()
		created.Status = corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable}
		ReportNode(n, j, later(n.CreationTimestamp, 10*time.Second))
		return s.fields.nodeRegistered(n, created)
	})
}

// replicaSets stores the ReplicaSets, created and kept up to date by the
// Deployment and ReplicaSet controllers, and records their new UIDs for
// the pods' owner references.
func (s *storer) replicaSets() error {
	return storeEach(s, s.c.ReplicaSets, func(r int, rs *appsv1.ReplicaSet) error {
		old := rs.UID
		for k := range rs.Spec.Template.Spec.Containers {
			rs.Spec.Template.Spec.Containers[k].Image = PauseImage
		}
		appsv1defaults.SetObjectDefaults_ReplicaSet(rs)
		s.meta(&rs.ObjectMeta, uidReplicaSet, r, 1)
		s.uids[old] = rs.UID
		return s.fields.rsCreated(rs)
	})
}

// rsCreated records the fields of ReplicaSet rs's creation and of its
// status, both by kube-controller-manager, and sets that status: every
// replica exists; those of running apps are ready and available.
func (f *fieldManagers) rsCreated(rs *appsv1.ReplicaSet) error {
	created := rs.DeepCopy()
	created.Status = appsv1.ReplicaSetStatus{}
	live, err := f.rs.Update(&appsv1.ReplicaSet{}, created, managerControllers)
	if err != nil {
		return fmt.Errorf("managed fields of ReplicaSet %s: %w", rs.Name, err)
	}
	spec, err := fieldsOf(live, managerControllers, false)
	if err != nil {
		return err
	}
	n := *rs.Spec.Replicas
	rs.Status = appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ObservedGeneration: rs.Generation}
	if strings.HasPrefix(rs.Name, rsName("run-")) {
		rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = n, n
	}
	status, err := owned(f.rsStatus, live, rs.DeepCopy(), managerControllers, true)
	if err != nil {
		return err
	}
	rs.ManagedFields = []metav1.ManagedFieldsEntry{
		entry(managerControllers, "", "apps/v1", rs.CreationTimestamp, spec),
		entry(managerControllers, "status", "apps/v1", later(rs.CreationTimestamp, 2*time.Second), status),
	}
	return nil
}
