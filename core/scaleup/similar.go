package scaleup

import (
	"math"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// ignoredForBalancing are labels that differ between groups alike but for
// where they run, as in Cluster Autoscaler's comparison. Labels of one
// provider come from it, in Input.BalancingIgnoredLabels.
var ignoredForBalancing = []string{
	corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
	simulator.TemplateNodeLabel,
}

// memoryDifferenceRatio is how much memory may differ between similar
// groups (instance types of one family differ slightly).
const memoryDifferenceRatio = 0.015

// similarGroups lists the groups that may grow now and whose templates
// match id's except for zone and group labels, id first.
func (d *decision) similarGroups(id string) []string {
	base := d.groupByID(id)
	out := []string{id}
	for _, g := range d.in.Groups {
		if g.ID == id || g.Unavailable != "" {
			continue
		}
		if n, _ := d.headroom(g); n <= 0 {
			continue
		}
		if d.similar(base.Template.Node, g.Template.Node) {
			out = append(out, g.ID)
		}
	}
	return out
}

func (d *decision) similar(a, b *corev1.Node) bool {
	if len(d.in.BalancingLabels) > 0 {
		return SameLabels(a, b, d.in.BalancingLabels)
	}
	return Similar(a, b, d.in.BalancingIgnoredLabels)
}

// SameLabels reports whether both nodes carry every one of labels, with
// equal values: Cluster Autoscaler's --balancing-label comparison, which
// replaces every other.
func SameLabels(a, b *corev1.Node, labels []string) bool {
	for _, k := range labels {
		va, okA := a.Labels[k]
		vb, okB := b.Labels[k]
		if !okA || !okB || va != vb {
			return false
		}
	}
	return true
}

// Similar reports whether two template nodes offer the same: equal cpu and
// pods, memory within 1.5%, equal taints, and equal labels once the
// location and group labels (and extra, if given) are set aside.
func Similar(a, b *corev1.Node, extra []string) bool {
	ra, rb := a.Status.Allocatable, b.Status.Allocatable
	if ra.Cpu().Cmp(*rb.Cpu()) != 0 || ra.Pods().Cmp(*rb.Pods()) != 0 {
		return false
	}
	ma, mb := float64(ra.Memory().Value()), float64(rb.Memory().Value())
	if math.Abs(ma-mb) > memoryDifferenceRatio*math.Max(ma, mb) {
		return false
	}
	if !reflect.DeepEqual(normalTaints(a.Spec.Taints), normalTaints(b.Spec.Taints)) {
		return false
	}
	return reflect.DeepEqual(comparableLabels(a.Labels, extra), comparableLabels(b.Labels, extra))
}

func comparableLabels(l map[string]string, extra []string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	for _, k := range ignoredForBalancing {
		delete(out, k)
	}
	for _, k := range extra {
		delete(out, k)
	}
	return out
}

func normalTaints(t []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(t))
	for _, x := range t {
		out = append(out, corev1.Taint{Key: x.Key, Value: x.Value, Effect: x.Effect})
	}
	return out
}
