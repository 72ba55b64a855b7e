package scaleup

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pendingPod is a pending pod created age before epoch; edit changes it.
func pendingPod(name string, age time.Duration, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(epoch.Add(-age))}}
	if edit != nil {
		edit(p)
	}
	return p
}

func priority(n int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = ptr.To(n) } }

func delay(v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodScaleUpDelayAnnotation: v} }
}

func names(pods []*corev1.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return strings.Join(out, " ")
}

func TestSelectPending(t *testing.T) {
	claim := func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} }
	headroom := func(p *corev1.Pod) {
		p.Annotations = map[string]string{"tidal.dev/headroom-for": "Deployment default/web"}
		p.Spec.Priority = ptr.To[int32](-10)
	}
	tests := []struct {
		name              string
		sel               Selection
		pods              []*corev1.Pod
		want              string
		expendable, young int
		unsupported       string
	}{
		{"below the cutoff is expendable", Selection{PriorityCutoff: -10},
			[]*corev1.Pod{pendingPod("low", time.Hour, priority(-11)), pendingPod("at", time.Hour, priority(-10))}, "at", 1, 0, ""},
		{"headroom at the cutoff counts", Selection{PriorityCutoff: -10},
			[]*corev1.Pod{pendingPod("headroom", time.Hour, headroom)}, "headroom", 0, 0, ""},
		{"younger than the delay waits", Selection{PriorityCutoff: -10, NewPodDelay: time.Minute},
			[]*corev1.Pod{pendingPod("new", 30*time.Second, nil), pendingPod("old", 2*time.Minute, nil)}, "old", 0, 1, ""},
		{"the annotation shortens the delay", Selection{PriorityCutoff: -10, NewPodDelay: time.Minute},
			[]*corev1.Pod{pendingPod("eager", 30*time.Second, delay("10s"))}, "eager", 0, 0, ""},
		{"the annotation lengthens the delay", Selection{PriorityCutoff: -10},
			[]*corev1.Pod{pendingPod("patient", 30*time.Second, delay("10m"))}, "", 0, 1, ""},
		{"a malformed annotation keeps the default", Selection{PriorityCutoff: -10, NewPodDelay: time.Minute},
			[]*corev1.Pod{pendingPod("odd", 30*time.Second, delay("soon")), pendingPod("neg", 30*time.Second, delay("-1s"))}, "", 0, 2, ""},
		{"dynamic resource claims are not simulated", Selection{PriorityCutoff: -10},
			[]*corev1.Pod{pendingPod("dra", time.Hour, claim), pendingPod("plain", time.Hour, nil)}, "plain", 0, 0, "dra"},
		{"most important first, then oldest, then by name", Selection{PriorityCutoff: -10},
			[]*corev1.Pod{pendingPod("b", time.Hour, nil), pendingPod("a", time.Hour, nil), pendingPod("older", 2*time.Hour, nil),
				pendingPod("urgent", time.Minute, priority(100))}, "urgent older a b", 0, 0, ""},
	}
	for _, tc := range tests {
		got := SelectPending(tc.pods, epoch, tc.sel)
		if names(got.Pods) != tc.want || got.Expendable != tc.expendable || got.Young != tc.young || names(got.Unsupported) != tc.unsupported {
			t.Errorf("%s: kept [%s], %d expendable, %d young, unsupported [%s]; want [%s], %d, %d, [%s]", tc.name,
				names(got.Pods), got.Expendable, got.Young, names(got.Unsupported), tc.want, tc.expendable, tc.young, tc.unsupported)
		}
	}
}

// Pods created in the same second (a ReplicaSet's burst) are decided in
// the same order whatever order the lister returns them in.
func TestSelectPendingDoesNotDependOnListerOrder(t *testing.T) {
	var pods []*corev1.Pod
	for i := 0; i < 20; i++ {
		pods = append(pods, pendingPod(fmt.Sprintf("web-%02d", i), time.Hour, priority(int32(i%2))))
	}
	sel := Selection{PriorityCutoff: -10}
	first := SelectPending(pods, epoch, sel).Pods
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 5; i++ {
		shuffled := slices.Clone(pods)
		simtest.Shuffle(r, shuffled)
		if got := SelectPending(shuffled, epoch, sel).Pods; !slices.Equal(got, first) {
			t.Fatalf("lister order %d: [%s], want [%s]", i, names(got), names(first))
		}
	}
}

// Groups a decision left unfinished for lack of time go first among groups
// of their priority in the next decision.
func TestOrderGroups(t *testing.T) {
	group := func(key string, priority int32) *simulator.PodGroup {
		return &simulator.PodGroup{Key: key, Pods: []*corev1.Pod{{Spec: corev1.PodSpec{Priority: ptr.To(priority)}}}}
	}
	groups := []*simulator.PodGroup{group("urgent", 10), group("a", 0), group("b", 0), group("c", 0)}
	last := &Plan{Unfinished: []*simulator.PodGroup{group("c", 0), group("b", 0)}}
	tests := []struct {
		name       string
		unfinished map[string]bool
		want       string
	}{
		{"nothing unfinished keeps the order", nil, "[urgent a b c]"},
		{"unfinished first within their priority", last.UnfinishedKeys(), "[urgent b c a]"},
		{"never before a higher priority", map[string]bool{"a": true}, "[urgent a b c]"},
		{"an unfinished group gone changes nothing", map[string]bool{"gone": true}, "[urgent a b c]"},
	}
	for _, tc := range tests {
		var keys []string
		for _, g := range OrderGroups(groups, tc.unfinished) {
			keys = append(keys, g.Key)
		}
		if fmt.Sprint(keys) != tc.want {
			t.Errorf("%s: order %v, want %s", tc.name, keys, tc.want)
		}
	}
}

func TestRetry(t *testing.T) {
	groups := []Group{{ID: "a", Target: 2, Max: 10}, {ID: "b", Target: 0, Max: 10}}
	tests := []struct {
		name    string
		results []Result
		attempt int
		want    string
		again   bool
	}{
		{"all grew: done", []Result{{Group: "a", Delta: 3}}, 0, "a:5+3 b:0+0", false},
		{"a refused: decide again without it", []Result{{Group: "a", Refused: "backed off"}}, 0, "a:2+0(backed off) b:0+0", true},
		{"one grew, one refused: again, from there", []Result{{Group: "b", Delta: 1}, {Group: "a", Refused: "quota"}}, 1,
			"a:2+0(quota) b:1+1", true},
		{"refused on the last attempt: stop", []Result{{Group: "a", Refused: "quota"}}, MaxAttempts - 1, "a:2+0(quota) b:0+0", false},
		{"nothing to do", nil, 0, "a:2+0 b:0+0", false},
	}
	for _, tc := range tests {
		next, again := Retry(groups, tc.results, tc.attempt)
		var parts []string
		for _, g := range next {
			s := fmt.Sprintf("%s:%d+%d", g.ID, g.Target, g.Upcoming)
			if g.Unavailable != "" {
				s += "(" + g.Unavailable + ")"
			}
			parts = append(parts, s)
		}
		if got := strings.Join(parts, " "); got != tc.want || again != tc.again {
			t.Errorf("%s: groups %s, again %v; want %s, %v", tc.name, got, again, tc.want, tc.again)
		}
	}
	if groups[0].Target != 2 || groups[0].Unavailable != "" {
		t.Fatalf("Retry changed its input: %+v", groups[0])
	}
}

// A refused group is left out of the next decision, which grows the
// next-best group instead.
func TestAfterARefusalTheNextDecisionGrowsAnotherGroup(t *testing.T) {
	c := newCluster(t)
	c.group("small", "4", "16Gi", "a", 0, 10)
	c.group("large", "8", "32Gi", "a", 0, 10)
	c.pend(2, "web", "3", "1Gi", nil)
	first := nodesAdded(c.decide("least-waste", nil))
	if len(first) != 1 {
		t.Fatalf("first decision %v: want one group grown", first)
	}
	var chosen, other string
	for g := range first {
		chosen, other = g, map[string]string{"small": "large", "large": "small"}[g]
	}
	groups, again := Retry(c.groups, []Result{{Group: chosen, Refused: "quota exceeded"}}, 0)
	if !again {
		t.Fatal("a refusal on the first attempt: want another decision")
	}
	c.groups = groups
	second := c.decide("least-waste", nil)
	if got := nodesAdded(second); len(got) != 1 || got[other] == 0 {
		t.Fatalf("after %s refused: %v, want %s to grow", chosen, got, other)
	}
}

// TestSeen: a real pod takes its pictured replica's place exactly when
// SelectPending would keep it, or when it is on or nominated to a node.
func TestSeen(t *testing.T) {
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "n1" }
	nominated := func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }
	tests := []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pendingPod("old", 20*time.Second, nil), true},
		{pendingPod("young", 5*time.Second, nil), false},
		{pendingPod("young-bound", time.Second, bound), true},
		{pendingPod("young-nominated", time.Second, nominated), true},
		{pendingPod("young-no-delay", time.Second, delay("0s")), true},
		{pendingPod("old-long-delay", 20*time.Second, delay("1m")), false},
		{pendingPod("old-bad-delay", 20*time.Second, delay("soon")), true},
	}
	for _, tt := range tests {
		if got := Seen(tt.pod, epoch, 10*time.Second); got != tt.want {
			t.Errorf("%s: Seen = %v, want %v", tt.pod.Name, got, tt.want)
		}
		// The same pod, pending, is kept by SelectPending exactly when seen.
		if tt.pod.Spec.NodeName == "" && tt.pod.Status.NominatedNodeName == "" {
			kept := len(SelectPending([]*corev1.Pod{tt.pod}, epoch, Selection{NewPodDelay: 10 * time.Second}).Pods) == 1
			if kept != tt.want {
				t.Errorf("%s: SelectPending keeps it = %v, Seen = %v", tt.pod.Name, kept, tt.want)
			}
		}
	}
}

// The keyed sort orders pods as comparing the pods themselves does:
// priority (unset is 0), creation to the nanosecond, namespace, name, on
// pods drawn so that every one of these ties often, before and after the
// Unix epoch.
func TestSortPendingIsThePodsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	base := []time.Time{epoch, time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)}
	for round := 0; round < 50; round++ {
		var pods []*corev1.Pod
		for i := 0; i < 200; i++ {
			age := time.Duration(r.IntN(3))*time.Second + time.Duration(r.IntN(2))*time.Duration(r.IntN(1e9))
			p := pendingPod(fmt.Sprintf("p-%d", r.IntN(40)), 0, nil)
			p.Namespace = fmt.Sprintf("ns-%d", r.IntN(3))
			p.UID = types.UID(fmt.Sprintf("u-%d", i))
			p.CreationTimestamp = metav1.NewTime(base[r.IntN(2)].Add(-age))
			if n := r.IntN(4); n > 0 {
				p.Spec.Priority = ptr.To(int32(n - 2))
			}
			pods = append(pods, p)
		}
		want := slices.Clone(pods)
		slices.SortStableFunc(want, func(a, b *corev1.Pod) int {
			return cmpPods(a, b)
		})
		got := slices.Clone(pods)
		sortPending(got)
		for i := range got {
			if cmpPods(got[i], want[i]) != 0 {
				t.Fatalf("round %d: at %d %s/%s, want %s/%s", round, i, got[i].Namespace, got[i].Name, want[i].Namespace, want[i].Name)
			}
		}
	}
}

// cmpPods is the pending pods' order, read from the pods.
func cmpPods(a, b *corev1.Pod) int {
	if c := PodPriority(b) - PodPriority(a); c != 0 {
		return int(c)
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
}

// PendingOrder gives SelectPending's pods in its order, iteration after
// iteration, as pods come, go and are replaced by new objects of the same
// pod (another priority, another creation time), among pods that tie on
// priority and creation, the list in a new order each time and now and
// then holding one object twice.
func TestPendingOrderIsSelectPending(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	sel := Selection{PriorityCutoff: -1, NewPodDelay: time.Second}
	newPod := func(i int) *corev1.Pod {
		p := pendingPod(fmt.Sprintf("p-%d", i), time.Duration(1+r.IntN(3))*time.Second, nil)
		p.Namespace = fmt.Sprintf("ns-%d", r.IntN(3))
		if n := r.IntN(4); n > 0 {
			p.Spec.Priority = ptr.To(int32(n - 2))
		}
		return p
	}
	var pods []*corev1.Pod
	for i := range 300 {
		pods = append(pods, newPod(i))
	}
	var o PendingOrder
	kept, n := 0, 300
	for step := range 200 {
		for range r.IntN(4) {
			switch i := r.IntN(len(pods)); r.IntN(3) {
			case 0:
				pods = append(pods, newPod(n))
				n++
			case 1:
				pods = slices.Delete(pods, i, i+1)
			case 2:
				q := newPod(i)
				q.Name, q.Namespace, q.UID = pods[i].Name, pods[i].Namespace, pods[i].UID
				pods[i] = q
			}
		}
		listed := benchgen.ListerOrder(r, pods)
		if r.IntN(20) == 0 {
			listed = append(listed, listed[r.IntN(len(listed))])
		}
		want := SelectPending(listed, epoch, sel)
		got := o.Select(slices.Clone(listed), epoch, sel)
		if !slices.Equal(got.Pods, want.Pods) || got.Expendable != want.Expendable || got.Young != want.Young {
			t.Fatalf("step %d: [%s] (%d expendable, %d young), want [%s] (%d, %d)", step, names(got.Pods),
				got.Expendable, got.Young, names(want.Pods), want.Expendable, want.Young)
		}
		kept += len(o.rank)
	}
	if kept == 0 {
		t.Fatal("no order was kept from one iteration to the next")
	}
}
