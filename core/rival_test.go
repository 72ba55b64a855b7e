package core

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestRivalHolds(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.MicroTime { return ptr.To(metav1.NewMicroTime(now.Add(d))) }
	lease := func(holder string, renew, acquire *metav1.MicroTime, seconds *int32) *coordinationv1.Lease {
		l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: renew, AcquireTime: acquire, LeaseDurationSeconds: seconds}}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		return l
	}
	for _, tc := range []struct {
		name      string
		lease     *coordinationv1.Lease
		held      bool
		wantUntil time.Time
	}{
		{"no Lease", nil, false, time.Time{}},
		{"released (no holder)", lease("", at(-time.Second), nil, ptr.To[int32](1)), false, time.Time{}},
		{"renewed within its duration", lease("ca-1", at(-10*time.Second), nil, ptr.To[int32](15)), true, now.Add(5 * time.Second)},
		{"renewed just now", lease("ca-1", at(0), nil, ptr.To[int32](15)), true, now.Add(15 * time.Second)},
		{"lapsed", lease("ca-1", at(-16*time.Second), nil, ptr.To[int32](15)), false, now.Add(-time.Second)},
		{"lapses exactly now", lease("ca-1", at(-15*time.Second), nil, ptr.To[int32](15)), false, now},
		{"a longer duration of its own", lease("ca-1", at(-50*time.Second), nil, ptr.To[int32](60)), true, now.Add(10 * time.Second)},
		{"no duration: Cluster Autoscaler's default 15s", lease("ca-1", at(-14*time.Second), nil, nil), true, now.Add(time.Second)},
		{"no renew time: the acquire time", lease("ca-1", nil, at(-20*time.Second), ptr.To[int32](15)), false, now.Add(-5 * time.Second)},
		{"a holder and no time at all", lease("ca-1", nil, nil, ptr.To[int32](15)), true, time.Time{}},
		{"renewed by a clock ahead of ours", lease("ca-1", at(30*time.Second), nil, ptr.To[int32](15)), true, now.Add(45 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, held := RivalHolds(tc.lease, now)
			if held != tc.held || !hold.Until.Equal(tc.wantUntil) {
				t.Errorf("RivalHolds = %v until %v, want %v until %v", held, hold.Until, tc.held, tc.wantUntil)
			}
		})
	}
}

// The watch stands aside while the Lease is held, says so once with a
// warning event on the Lease, and once again with a normal event when the
// Lease lapses; without the Lease it never stands aside; an unreadable
// Lease stops the loop with an error naming it.
func TestRivalWatchStandsAsideWhileTheLeaseIsHeld(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	recorder := record.NewFakeRecorder(10)
	events := newEventDeduper(recorder, clock, true)
	client := fake.NewClientset()
	w := newRivalWatch(client, "kube-system", "cluster-autoscaler", clock, events)
	step := func(want bool) {
		t.Helper()
		aside, err := w.standAside(ctx)
		if err != nil || aside != want {
			t.Fatalf("standAside = %v, %v; want %v", aside, err, want)
		}
	}
	step(false)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-autoscaler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ca-7f9_1"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: ptr.To(metav1.NewMicroTime(clock.Now()))}}
	if _, err := client.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step(true)
	clock.Step(10 * time.Second)
	step(true)
	clock.Step(6 * time.Second)
	step(false)
	step(false)
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	want := []string{
		"Warning ClusterAutoscalerActive Cluster Autoscaler (ca-7f9_1) holds Lease kube-system/cluster-autoscaler: tidal's node loop does not act until it lapses",
		"Normal ClusterAutoscalerGone Lease kube-system/cluster-autoscaler is no longer held: tidal's node loop acts again",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\ngot  %q\nwant %q", got, want)
	}

	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "cluster-autoscaler", nil)
	})
	aside, err := w.standAside(ctx)
	if !aside || err == nil || !strings.Contains(err.Error(), "kube-system/cluster-autoscaler") || !strings.Contains(err.Error(), "--cluster-autoscaler-lease") {
		t.Errorf("an unreadable Lease: standAside = %v, %v; want to stand aside with an error naming the Lease and the flag", aside, err)
	}
}
