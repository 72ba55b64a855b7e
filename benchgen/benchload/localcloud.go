package benchload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
)

// LocalCloud is the local cloud of c's node groups: their shapes, zones,
// labels and taints, never below or above the generator's sizes' bounds.
func LocalCloud(c *benchgen.Cluster) *local.Config {
	cfg := &local.Config{}
	for _, g := range c.NodeGroups {
		alloc := g.Template.Status.Allocatable
		spec := local.GroupSpec{
			Name: g.ID, MinSize: g.MinSize, MaxSize: g.MaxSize, Zone: g.Zone,
			InstanceType: fmt.Sprintf("bench-%d", alloc.Cpu().Value()),
			CPU:          alloc.Cpu().DeepCopy(), Memory: alloc.Memory().DeepCopy(), Pods: alloc.Pods().Value(),
			Labels:       map[string]string{benchgen.LabelNodeGroup: g.ID},
			PricePerHour: ptr.To(0.05 * float64(alloc.Cpu().Value())),
		}
		if g.Taint != nil {
			spec.Taints = []corev1.Taint{*g.Taint}
		}
		cfg.NodeGroups = append(cfg.NodeGroups, spec)
	}
	return cfg
}

// LocalNode is node j of c as registered by a machine of the local cloud's
// group (LocalCloud), its kubelet's status reported at.
func LocalNode(c *benchgen.Cluster, j int, at metav1.Time) *corev1.Node {
	n := c.Nodes[j].DeepCopy()
	n.UID, n.CreationTimestamp = "", metav1.Time{}
	n.Spec.ProviderID = local.ProviderIDPrefix + n.Labels[benchgen.LabelNodeGroup] + "/" + n.Name
	benchgen.RegisterNode(n)
	benchgen.ReportNode(n, j, at)
	return n
}
