package simulator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// BaseCheck is a pod group's check as of the snapshot outside any fork,
// at one version of it: the next check of the group starts from it and
// takes in only the changes made since (the snapshot's journal, then its
// open forks), through the plugins' own incremental updates (their
// PreFilter extensions), rather than PreFilter over every pod of the
// cluster. It is a value: CheckGroupFrom never changes it.
//
// It serves only groups whose PreFilter state is what these updates keep
// exact (see carried): the inter-pod affinity plugin's counts of matching
// pods per topology domain, summed pod by pod. Others are checked afresh.
type BaseCheck struct {
	gc      *GroupCheck
	version uint64
	listers uint64
	// carried is set when the check was not made afresh.
	carried bool
}

// Carried tells whether the check this base came with started from an
// earlier base rather than from PreFilter.
func (b *BaseCheck) Carried() bool { return b.carried }

// CheckGroupFrom is CheckGroup, starting from base when base holds for g
// (nil, or another group's, does not). It returns g's check and the base
// for the next one: base brought to the snapshot's version, or a new one
// (nil when g cannot have one).
func (c *Checker) CheckGroupFrom(ctx context.Context, g *PodGroup, base *BaseCheck) (*GroupCheck, *BaseCheck, error) {
	if !carried(g.Representative()) {
		gc, err := c.CheckGroup(ctx, g)
		return gc, nil, err
	}
	if base != nil && base.gc.Group.Key == g.Key && base.gc.Pod.UID == g.Representative().UID && base.listers == c.ListerVersion() {
		if changes, forked, ok := c.snapshot.changesSince(base.version); ok {
			next, err := c.advance(ctx, base, changes)
			if err != nil {
				return nil, nil, err
			}
			gc, err := c.replay(ctx, next.gc, forked, g, 1)
			return gc, next, err
		}
	}
	gc, err := c.CheckGroup(ctx, g)
	if err != nil || !gc.carries() {
		return gc, nil, err
	}
	// The base is the check without the open forks' changes.
	bare, err := c.replay(ctx, gc, c.snapshot.undo, g, -1)
	if err != nil {
		return nil, nil, err
	}
	return gc, &BaseCheck{gc: bare, version: c.snapshot.version, listers: c.ListerVersion()}, nil
}

// advance brings base to the snapshot's version with the changes made
// outside forks since.
func (c *Checker) advance(ctx context.Context, base *BaseCheck, changes []undoEntry) (*BaseCheck, error) {
	if len(changes) == 0 {
		next := *base
		next.carried = true
		return &next, nil
	}
	gc, err := c.replay(ctx, base.gc, changes, base.gc.Group, 1)
	if err != nil {
		return nil, err
	}
	return &BaseCheck{gc: gc, version: c.snapshot.version, listers: base.listers, carried: true}, nil
}

// replay returns a copy of gc, for g, with the changes taken in (sign 1)
// or taken out, the last first (sign -1).
func (c *Checker) replay(ctx context.Context, gc *GroupCheck, changes []undoEntry, g *PodGroup, sign int) (*GroupCheck, error) {
	pc := *gc.PodCheck
	if pc.Status == nil {
		pc.state = gc.state.Clone().(*framework.CycleState)
	}
	if rep := g.Representative(); rep != pc.Pod {
		// An equivalent pod, or a newer object of the same.
		info := *pc.Info
		info.Pod = rep
		pc.Pod, pc.Info = rep, &info
	}
	out := *gc
	out.PodCheck, out.Group = &pc, g
	if pc.Status != nil {
		return &out, nil
	}
	for i := range changes {
		e := changes[i]
		if sign < 0 {
			e = changes[len(changes)-1-i]
		}
		if err := c.apply(ctx, &pc, e, sign); err != nil {
			return nil, fmt.Errorf("update scheduling state of pod group %s: %w", g.Key, err)
		}
	}
	return &out, nil
}

// apply takes one change into pc's state: a pod added or removed, or a
// node removed with its pods (sign -1 takes it out again). A node added
// holds no pods yet and changes nothing.
func (c *Checker) apply(ctx context.Context, pc *PodCheck, e undoEntry, sign int) error {
	add := func(pi fwk.PodInfo, ni fwk.NodeInfo, in bool) *fwk.Status {
		if in {
			return c.fw.RunPreFilterExtensionAddPod(ctx, pc.state, pc.Pod, pi, ni)
		}
		return c.fw.RunPreFilterExtensionRemovePod(ctx, pc.state, pc.Pod, pi, ni)
	}
	var st *fwk.Status
	switch e.kind {
	case undoAddPod:
		st = add(e.pod, e.node, sign > 0)
	case undoRemovePod:
		st = add(e.pod, e.node, sign < 0)
	case undoRemoveNode:
		for _, pi := range e.node.Pods {
			if st = add(pi, e.node, sign < 0); !st.IsSuccess() {
				break
			}
		}
	}
	return st.AsError()
}

// carries tells whether the plugins' incremental updates keep the check
// exact: of the plugins whose state depends on other pods, only inter-pod
// affinity runs (its counts are sums over pods; topology spread's
// incremental update is not exact, see Place).
func (gc *GroupCheck) carries() bool {
	if gc.Status != nil {
		return true
	}
	skip := gc.state.GetSkipFilterPlugins()
	return !skip.Has(names.InterPodAffinity) && skip.Has(names.PodTopologySpread)
}

// carried tells whether pod's PreFilter depends on the snapshot only
// through the inter-pod affinity plugin's counts, which it runs for pod
// (pod has required affinity or anti-affinity terms of its own, so the
// plugin never skips it): no topology spread, no volume whose PreFilter
// reads the snapshot's claims, no resource claims.
func carried(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	terms := a != nil && ((a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0))
	return terms && len(pod.Spec.TopologySpreadConstraints) == 0 && len(pod.Spec.ResourceClaims) == 0 && PlainVolumes(pod)
}

// PlainVolumes tells whether pod's volumes are only of the kinds no
// scheduler plugin counts or looks up: projected, config map, secret,
// empty dir, downward API.
func PlainVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		if s.Projected == nil && s.ConfigMap == nil && s.Secret == nil && s.EmptyDir == nil && s.DownwardAPI == nil {
			return false
		}
	}
	return true
}
