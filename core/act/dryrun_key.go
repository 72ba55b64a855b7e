package act

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// growthKey is what makes a scale-up the same decision as last
// iteration's. For pending pods it is the pods and the capacity asked for
// (nodes times one node's allocatable), not the group: when an expander's
// tie-break (random among balanced groups) picks another group each
// iteration for the same pods and the same capacity, the decision still
// stands and counts once. A scale-up for a schedule or a trigger has no
// pods: its group and sizes are the decision.
func growthKey(g Growth) string {
	up := g.Up
	if g.Why != "" || len(up.Pods) == 0 {
		return fmt.Sprintf("%s/%s/%d->%d", dryRunScaleUp, up.Group, up.From, up.To)
	}
	return fmt.Sprintf("%s/pods:%s/%s", dryRunScaleUp, podsDigest(up.Pods), capacityKey(g.NodeCapacity, up.To-up.From))
}

// podsDigest names a set of pods whatever their order: a digest of their
// sorted namespace/name.
func podsDigest(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	return fmt.Sprintf("%d-%s", len(names), hex.EncodeToString(sum[:8]))
}

// capacityKey writes n nodes' capacity as resource=amount, by name
// (n nodes when the capacity is unknown). The pod slots are left out: they
// count per node, so one large node and two small ones of the same
// capacity would differ.
func capacityKey(perNode corev1.ResourceList, n int) string {
	if len(perNode) == 0 {
		return fmt.Sprintf("nodes=%d", n)
	}
	parts := make([]string, 0, len(perNode))
	for _, name := range slices.Sorted(maps.Keys(perNode)) {
		if name == corev1.ResourcePods {
			continue
		}
		q := perNode[name]
		v := q.Value()
		if name == corev1.ResourceCPU {
			v = q.MilliValue()
		}
		parts = append(parts, fmt.Sprintf("%s=%d", name, v*int64(n)))
	}
	return strings.Join(parts, ",")
}
