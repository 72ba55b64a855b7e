package scaledown

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func podWithUID(name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
}

// A pod is gone only when the API says NotFound or its name has another
// UID; what the cache lacks is confirmed, and errors say nothing.
func TestPresence(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cache := []struct {
		name        string
		cached      *corev1.Pod
		synced      bool
		want        Presence
		wantConfirm bool
	}{
		{"not synced", podWithUID("a", "u1"), false, PresenceUnknown, false},
		{"in the cache", podWithUID("a", "u1"), true, PresenceHere, false},
		{"the name is another pod's", podWithUID("a", "u2"), true, PresenceGone, false},
		{"missing from the cache: ask", nil, true, PresenceUnknown, true},
		{"missing from an unsynced cache", nil, false, PresenceUnknown, false},
	}
	for _, tt := range cache {
		got, confirm := FromCache("u1", tt.cached, tt.synced)
		if got != tt.want || confirm != tt.wantConfirm {
			t.Errorf("cache, %s: %v (confirm %v), want %v (confirm %v)", tt.name, got, confirm, tt.want, tt.wantConfirm)
		}
	}
	api := []struct {
		name string
		got  *corev1.Pod
		err  error
		want Presence
	}{
		{"found", podWithUID("a", "u1"), nil, PresenceHere},
		{"replaced", podWithUID("a", "u2"), nil, PresenceGone},
		{"NotFound", nil, apierrors.NewNotFound(pods, "a"), PresenceGone},
		{"503", nil, apierrors.NewServiceUnavailable("etcd leader changed"), PresenceUnknown},
		{"500", nil, apierrors.NewInternalError(errors.New("boom")), PresenceUnknown},
		{"429", nil, apierrors.NewTooManyRequests("slow down", 1), PresenceUnknown},
		{"server timeout", nil, apierrors.NewServerTimeout(pods, "get", 1), PresenceUnknown},
		{"client timeout", nil, context.DeadlineExceeded, PresenceUnknown},
		{"wrapped NotFound", nil, fmt.Errorf("get: %w", apierrors.NewNotFound(pods, "a")), PresenceGone},
		{"no error, no pod", nil, nil, PresenceUnknown},
	}
	for _, tt := range api {
		if got := FromAPI("u1", tt.got, tt.err); got != tt.want {
			t.Errorf("API, %s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOverdue(t *testing.T) {
	maxGrace := 10 * time.Second
	at := func(ago time.Duration) Evicted { return Evicted{Pod: podWithUID(ago.String(), ""), At: now.Add(-ago)} }
	left := []Evicted{at(0), at(maxGrace), at(maxGrace + PodEvictionHeadroom - time.Millisecond), at(maxGrace + PodEvictionHeadroom), at(time.Hour)}
	waiting, overdue := Overdue(left, now, maxGrace)
	names := func(es []Evicted) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Pod.Name)
		}
		return out
	}
	if want := []string{"0s", "10s", "39.999s"}; !slices.Equal(names(waiting), want) {
		t.Errorf("waiting %v, want %v", names(waiting), want)
	}
	if want := []string{"40s", "1h0m0s"}; !slices.Equal(names(overdue), want) {
		t.Errorf("overdue %v, want %v", names(overdue), want)
	}
}

// A pod bound to a node after its removal was planned is unexpected;
// the pods of a node's own (DaemonSet, mirror, finished, long gone) are not.
func TestUnexpected(t *testing.T) {
	pod := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := podWithUID(name, types.UID(name))
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	planned := pod("planned", nil)
	onNode := []*corev1.Pod{
		planned,
		pod("ds", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "DaemonSet" }),
		pod("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
		pod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("long-terminating", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Hour)}
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
		}),
		pod("new", nil),
		pod("bare", func(p *corev1.Pod) { p.OwnerReferences = nil }),
		pod("terminating", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
		}),
		// Same name as the planned pod, another UID: a replacement.
		podWithUID("planned", "other"),
	}
	var got []string
	for _, p := range Unexpected(onNode, []*corev1.Pod{planned}, now) {
		got = append(got, p.Name+"/"+string(p.UID))
	}
	want := []string{"new/new", "bare/bare", "terminating/terminating", "planned/other"}
	if !slices.Equal(got, want) {
		t.Fatalf("unexpected pods %v, want %v", got, want)
	}
	if u := Unexpected([]*corev1.Pod{planned}, []*corev1.Pod{planned}, now); len(u) != 0 {
		t.Fatalf("the planned pod itself is unexpected: %v", u)
	}
}

func TestSoftTaintChanges(t *testing.T) {
	nodes := []SoftTaintNode{
		{Name: "needed-z", Tainted: true},
		{Name: "unneeded-2", Unneeded: true},
		{Name: "needed-a", Tainted: true},
		{Name: "unneeded-1", Unneeded: true},
		{Name: "already", Tainted: true, Unneeded: true},
		{Name: "plain"},
		{Name: "removing", Tainted: true, Removing: true},
		{Name: "removing-unneeded", Unneeded: true, Removing: true},
	}
	remove, add := SoftTaintChanges(nodes)
	if want := []string{"needed-a", "needed-z"}; !slices.Equal(remove, want) {
		t.Errorf("remove %v, want %v", remove, want)
	}
	if want := []string{"unneeded-2", "unneeded-1"}; !slices.Equal(add, want) {
		t.Errorf("add %v, want %v (the plan's order)", add, want)
	}
}

func TestBudget(t *testing.T) {
	tests := []struct {
		name  string
		count int
		d     time.Duration
		at    []time.Duration
		want  int
	}{
		{"count bounds", 3, time.Minute, []time.Duration{0, 0, 0, 0, 0}, 3},
		{"time bounds", 10, time.Second, []time.Duration{0, 500 * time.Millisecond, 999 * time.Millisecond, time.Second, time.Second}, 3},
		{"zero count: nothing", 0, time.Minute, []time.Duration{0}, 0},
		{"zero time: nothing", 10, 0, []time.Duration{0}, 0},
	}
	for _, tt := range tests {
		b := NewBudget(tt.count, now, tt.d)
		n := 0
		for _, at := range tt.at {
			if b.Take(now.Add(at)) {
				n++
			}
		}
		if n != tt.want {
			t.Errorf("%s: %d writes allowed, want %d", tt.name, n, tt.want)
		}
	}
}
