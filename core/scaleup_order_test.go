package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// Pods created in the same second (a ReplicaSet's burst) are decided in
// the same order whatever order the lister returns them in.
func TestPendingPodsOrderDoesNotDependOnListerOrder(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var pods []*corev1.Pod
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("web-%02d", i)
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			CreationTimestamp: created}, Spec: corev1.PodSpec{Priority: ptr.To(int32(i % 2))}})
	}
	l := &NodeLoop{opts: Options{ExpendablePodsPriorityCutoff: -10}}
	o := &observation{now: created.Add(time.Hour), pending: pods}
	first := l.selectPending(context.Background(), o, &iterationReport{})
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 5; i++ {
		o.pending = slices.Clone(pods)
		simtest.Shuffle(r, o.pending)
		if got := l.selectPending(context.Background(), o, &iterationReport{}); !slices.Equal(got, first) {
			t.Fatalf("lister order %d changed the order of pending pods", i)
		}
	}
}

// Groups a decision left unfinished for lack of time go first among groups
// of their priority in the next decision.
func TestUnfinishedGroupsGoFirst(t *testing.T) {
	group := func(key string, priority int32) *simulator.PodGroup {
		return &simulator.PodGroup{Key: key, Pods: []*corev1.Pod{{Spec: corev1.PodSpec{Priority: ptr.To(priority)}}}}
	}
	groups := []*simulator.PodGroup{group("urgent", 10), group("a", 0), group("b", 0), group("c", 0)}
	l := &NodeLoop{unfinished: groupKeys([]*simulator.PodGroup{group("c", 0), group("b", 0)})}
	var keys []string
	for _, g := range l.orderGroups(groups) {
		keys = append(keys, g.Key)
	}
	if fmt.Sprint(keys) != "[urgent b c a]" {
		t.Fatalf("order %v: want urgent (higher priority), then the unfinished b and c, then a", keys)
	}
}
