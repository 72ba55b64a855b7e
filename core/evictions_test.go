package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// restarted is a decider as a new tidal starts it: nothing in memory, the
// status ConfigMap of the client.
func restarted(client *fake.Clientset, clock *clocktesting.FakeClock) (*Decider, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(10)
	opts := Options{WriteStatusConfigMap: true, Namespace: "kube-system", StatusConfigMapName: "tidal-status"}
	return &Decider{status: newStatusWriter(client, opts, clock), events: telemetry.NewEvents(rec, clock, false, nil)}, rec
}

// The evictions of the scale-down under way outlive a restart: they are
// kept in the status ConfigMap, an iteration that did not reach
// scale-down keeps them there, and a restarted tidal reads them back, so
// the node where a moved pod runs still stays.
func TestRestartedTidalHoldsTheNodesOfMovedPods(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tidal-status", Namespace: "kube-system"}})
	evictedAt := clock.Now().Add(-30 * time.Second)
	before, _ := restarted(client, clock)
	if err := before.status.write(ctx, Status{Evictions: []scaledown.Eviction{{Controller: "rs-web", At: evictedAt}}}); err != nil {
		t.Fatal(err)
	}
	clock.Step(2 * time.Minute)
	if err := before.status.write(ctx, Status{Time: "later"}); err != nil {
		t.Fatal(err)
	}

	d, _ := restarted(client, clock)
	evs, err := d.evictions(ctx, act.Removing{}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	moved := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "default",
		CreationTimestamp: metav1.NewTime(evictedAt.Add(time.Second).Truncate(time.Second)),
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}}}}
	if !scaledown.Moved(moved, scaledown.EvictedSince(evs, d.mem.scaleDownOver)) {
		t.Fatalf("evictions read back %v: the pod moved before the restart is not held", evs)
	}
	// The actuator's own evictions come after those read back, which are
	// read once.
	client.ClearActions()
	mine := scaledown.Eviction{Controller: "rs-api", At: clock.Now()}
	evs, err = d.evictions(ctx, act.Removing{Evictions: []scaledown.Eviction{mine}}, clock.Now())
	if err != nil || fmt.Sprint(evs) != fmt.Sprint([]scaledown.Eviction{{Controller: "rs-web", At: evictedAt.UTC()}, mine}) {
		t.Fatalf("evictions %v (%v), want the one read back and the actuator's", evs, err)
	}
	if got := configMapVerbs(client); got != "" {
		t.Fatalf("requests %s, want the ConfigMap read once", got)
	}
	// An hour on, they are forgotten.
	clock.Step(scaledown.EvictionMemory)
	if evs, _ := d.evictions(ctx, act.Removing{}, clock.Now()); len(evs) != 0 {
		t.Fatalf("evictions %v an hour on, want none", evs)
	}
}

// What cannot be read back is reported and left out, and the scale-down
// goes on; a ConfigMap that cannot be read stops it until it can.
func TestUnreadableEvictionsAreReportedAndIgnored(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name, stored string
		want         int
		event        string
	}{
		{"nothing kept", "", 0, ""},
		{"not a list", "{broken", 0, "EvictionsUnreadable 1 eviction(s) kept in scaleDownEvictions not read back"},
		{"one bad entry", `[{"controller":""},{"controller":"rs-web","at":"2026-11-01T11:59:00Z"}]`, 1,
			"EvictionsUnreadable 1 eviction(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tidal-status", Namespace: "kube-system"}}
			if tc.stored != "" {
				cm.Data = map[string]string{EvictionsConfigMapKey: tc.stored}
			}
			d, rec := restarted(fake.NewClientset(cm), clock)
			evs, err := d.evictions(ctx, act.Removing{}, clock.Now())
			if err != nil || len(evs) != tc.want {
				t.Fatalf("evictions %v (%v), want %d", evs, err, tc.want)
			}
			select {
			case e := <-rec.Events:
				if tc.event == "" || !strings.Contains(e, tc.event) {
					t.Fatalf("event %q, want %q", e, tc.event)
				}
			default:
				if tc.event != "" {
					t.Fatalf("no event, want %q", tc.event)
				}
			}
		})
	}
	client := fake.NewClientset()
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
	})
	d, _ := restarted(client, clock)
	if _, err := d.evictions(ctx, act.Removing{}, clock.Now()); err == nil {
		t.Fatal("a failed read of the status ConfigMap read as no evictions kept")
	}
	if d.mem.evictionsRead {
		t.Fatal("a failed read is not tried again")
	}
}
