package scaledown

import (
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// A drain evicts its next pod only while fewer than the limit of evicted
// pods wait for a node, and gives up once it has waited the timeout.
func TestPacingNext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pacing  Pacing
		waiting int
		waited  time.Duration
		want    PaceStep
	}{
		{"no pacing", Pacing{Limit: 0, Timeout: time.Minute}, 9, time.Hour, PaceEvict},
		{"none waiting", Pacing{Limit: 1, Timeout: time.Minute}, 0, 0, PaceEvict},
		{"below the limit", Pacing{Limit: 2, Timeout: time.Minute}, 1, 0, PaceEvict},
		{"at the limit", Pacing{Limit: 1, Timeout: time.Minute}, 1, 59 * time.Second, PaceWait},
		{"above the limit", Pacing{Limit: 2, Timeout: time.Minute}, 3, 0, PaceWait},
		{"at the limit for the timeout", Pacing{Limit: 1, Timeout: time.Minute}, 1, time.Minute, PaceGiveUp},
		{"a slot frees as the timeout comes", Pacing{Limit: 1, Timeout: time.Minute}, 0, time.Minute, PaceEvict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pacing.Next(tc.waiting, tc.waited); got != tc.want {
				t.Fatalf("step %d, want %d", got, tc.want)
			}
		})
	}
}

// An evicted pod waits for a node until a pod of its controller created
// since is bound, or, when its controller made none, for ReplacementGrace;
// pods as the API server stores them, in any order.
func TestUnplaced(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 6))
	pod := func(uid, node string, created time.Duration) *corev1.Pod {
		p := admitted(r, uid)
		ownedBy(types.UID(uid), now.Add(created))(p)
		p.Spec.NodeName = node
		return p
	}
	terminating := func(p *corev1.Pod) *corev1.Pod {
		p.DeletionTimestamp = &metav1.Time{Time: now.Add(3 * time.Second)}
		return p
	}
	evictedAt := now.Add(700 * time.Millisecond)
	for _, tc := range []struct {
		name      string
		evictions []Eviction
		pods      []*corev1.Pod
		since     time.Time
		later     time.Duration // after evictedAt; a second if 0
		want      int
	}{
		{name: "no eviction", pods: []*corev1.Pod{pod("rs-web", "", time.Second)}, want: 0},
		{name: "replacement not created yet", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "n1", -time.Hour)}, want: 1},
		{name: "replacement pending", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "", 2*time.Second), pod("rs-web", "n1", -time.Hour)}, want: 1},
		{name: "replacement bound", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "n2", 2*time.Second)}, want: 0},
		{name: "bound in the second of the eviction (stored to the second)", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "n2", 0)}, want: 0},
		{name: "two evicted, one bound", evictions: []Eviction{{"rs-web", evictedAt}, {"rs-web", evictedAt.Add(time.Second)}},
			pods: []*corev1.Pod{pod("rs-web", "n2", 2*time.Second), pod("rs-web", "", 3*time.Second)}, want: 1},
		{name: "another controller's pod bound", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-api", "n2", 2*time.Second)}, want: 1},
		{name: "two controllers, one placed", evictions: []Eviction{{"rs-web", evictedAt}, {"rs-api", evictedAt}},
			pods: []*corev1.Pod{pod("rs-api", "n2", 2*time.Second), pod("rs-web", "", 2*time.Second)}, want: 1},
		{name: "an eviction before since no longer counts", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "", 2*time.Second)}, since: evictedAt.Add(time.Millisecond), want: 0},
		{name: "an older eviction takes its replacement first", evictions: []Eviction{{"rs-web", evictedAt.Add(-time.Minute)}, {"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "n2", -50*time.Second)}, since: evictedAt.Add(-time.Second), want: 1},
		{name: "no replacement within the grace: its controller was scaled down", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "n1", -time.Hour)}, later: ReplacementGrace, want: 0},
		{name: "replacement pending long after the eviction", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "", 2*time.Second)}, later: time.Minute, want: 1},
		{name: "a terminating pod is no replacement", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{terminating(pod("rs-web", "", 2*time.Second))}, later: time.Minute, want: 0},
		{name: "more bound than evicted", evictions: []Eviction{{"rs-web", evictedAt}},
			pods: []*corev1.Pod{pod("rs-web", "n2", 2*time.Second), pod("rs-web", "n3", 2*time.Second)}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 {
				simtest.Shuffle(r, tc.pods)
				later := tc.later
				if later == 0 {
					later = time.Second
				}
				if got := Unplaced(tc.evictions, tc.pods, tc.since, evictedAt.Add(later)); got != tc.want {
					t.Fatalf("unplaced %d, want %d", got, tc.want)
				}
			}
		})
	}
}
