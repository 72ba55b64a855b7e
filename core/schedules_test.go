package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
)

// Every malformed item gets a ScheduleInvalid warning on the ConfigMap;
// the status names the first few and how many more.
func TestScheduleProblemsReported(t *testing.T) {
	var list strings.Builder
	for i := range 7 {
		fmt.Fprintf(&list, "- {name: e%d, nodeGroup: g, start: \"0 8 * * *\", duration: 1h}\n", i)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: nodeschedule.ConfigMapName, Namespace: "kube-system", UID: "u"},
		Data: map[string]string{nodeschedule.SchedulesKey: list.String()}}
	rec := record.NewFakeRecorder(100)
	l := &Decider{events: newEventDeduper(rec, clocktesting.NewFakeClock(time.Unix(0, 0)), false),
		sched: &schedules{config: nodeschedule.Parse(cm.Data, nil)}}
	status := l.sched.reportProblems(context.Background(), cm, l.events)
	if len(status) != maxStatusProblems+1 || !strings.HasPrefix(status[0], `schedules "e0": minSize: missing`) ||
		status[maxStatusProblems] != "and 2 more (see the ConfigMap's events)" {
		t.Errorf("status lines %q", status)
	}
	if len(rec.Events) != 7 {
		t.Fatalf("%d events, want 7", len(rec.Events))
	}
	if e := <-rec.Events; !strings.HasPrefix(e, `Warning ScheduleInvalid schedules "e0": minSize: missing; it is ignored`) {
		t.Errorf("event %q", e)
	}
}

// fakeGroup is a node group whose IncreaseSize records its deltas and
// fails while fail is set.
type fakeGroup struct {
	cloudprovider.NodeGroup
	id       string
	min, max int
	fail     error
	deltas   []int
	// hang, when set, holds IncreaseSize until it is closed, whatever its
	// context says: a cloud that never answers.
	hang <-chan struct{}
}

func (g *fakeGroup) Id() string   { return g.id }
func (g *fakeGroup) MinSize() int { return g.min }
func (g *fakeGroup) MaxSize() int { return g.max }
func (g *fakeGroup) IncreaseSize(ctx context.Context, delta int) error {
	if g.hang != nil {
		<-g.hang
		return errors.New("answered after the hang")
	}
	if g.fail != nil {
		return g.fail
	}
	g.deltas = append(g.deltas, delta)
	return nil
}

// scheduleLoop is a node loop with what enforcing schedules touches, one
// ready node of group g with 1 CPU, 800m of it requested.
func scheduleLoop(t *testing.T, g *fakeGroup, data map[string]string) (*Decider, *observation) {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	client := fake.NewSimpleClientset()
	l := &Decider{clock: clock, events: newEventDeduper(record.NewFakeRecorder(100), clock, false),
		state:   clusterstate.New(clusterstate.Options{InitialBackoff: time.Minute, MaxBackoff: time.Hour, BackoffReset: time.Hour}),
		metrics: NewMetrics(prometheus.NewRegistry(), false),
		sched:   &schedules{source: newConfigMapSource(client, "kube-system")},
		status:  newStatusWriter(client, Options{}, clock)}
	l.actuator = act.NewLive(act.Deps{Events: l.events, Status: l.status, Clock: clock, Metrics: l.metrics})
	live := newLiveSnapshot()
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("10")}
	live.recordNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}}, false)
	live.recordPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("800m")}}}}}}, false)
	snap, err := live.Sync()
	if err != nil {
		t.Fatal(err)
	}
	o := &observation{now: clock.Now(), snapshot: snap, groupOfNode: map[string]string{"n1": g.id},
		observed: map[string]clusterstate.NodeObservation{"n1": {Ready: true}},
		groups:   []*groupObservation{{group: g, target: 1}}}
	l.sched.config = nodeschedule.Parse(data, nil)
	l.sched.bounds, l.sched.next = l.sched.config.At(o.now)
	return l, o
}

const spareCPU = `
- {name: spare, nodeGroup: g, scope: cluster, resource: cpu, threshold: 50, for: 1m, cooldown: 10m, add: 1}
`

func TestEnforceSchedulesRaisesThenTriggers(t *testing.T) {
	g := &fakeGroup{id: "g", max: 10}
	l, o := scheduleLoop(t, g, map[string]string{
		nodeschedule.SchedulesKey: `[{name: now, nodeGroup: g, start: "0 9 * * *", duration: 2h, minSize: 3}]`,
		nodeschedule.TriggersKey:  spareCPU})
	report := &Iteration{}
	l.enforceSchedules(context.Background(), o, report)
	if !slices.Equal(g.deltas, []int{2}) || o.groups[0].target != 3 || !report.scaledUp {
		t.Fatalf("deltas %v, target %d: want the window's minimum 3 at once", g.deltas, o.groups[0].target)
	}
	if v := l.state.Group("g").Upcoming; v != 2 {
		t.Errorf("upcoming %d, want the 2 nodes asked for", v)
	}
	// 80 % of the cluster's CPU for a minute: the trigger adds a node.
	o.now = o.now.Add(time.Minute)
	l.sched.bounds, l.sched.next = l.sched.config.At(o.now) // as readSchedules does
	l.enforceSchedules(context.Background(), o, &Iteration{})
	if !slices.Equal(g.deltas, []int{2, 1}) || o.groups[0].target != 4 {
		t.Fatalf("deltas %v, target %d: want the trigger's node", g.deltas, o.groups[0].target)
	}
	if !l.sched.next.Equal(o.now.Add(10 * time.Minute)) {
		t.Errorf("next wake %s, want the cooldown's end (before the window's)", l.sched.next)
	}
}

func TestRefusedTriggerStartsNoCooldown(t *testing.T) {
	g := &fakeGroup{id: "g", max: 10, fail: errors.New("quota")}
	l, o := scheduleLoop(t, g, map[string]string{nodeschedule.TriggersKey: spareCPU})
	start := o.now
	l.enforceSchedules(context.Background(), o, &Iteration{})
	o.now = start.Add(time.Minute)
	report := &Iteration{}
	l.enforceSchedules(context.Background(), o, report)
	if _, ok := l.sched.triggers.LastTrigger["spare"]; ok || !slices.Equal(report.failedGroups, []string{"g"}) {
		t.Fatalf("after a refused scale-up: last trigger %v, failed groups %v", l.sched.triggers.LastTrigger, report.failedGroups)
	}
	if !l.state.Group("g").BackedOff {
		t.Fatal("the group is not backed off")
	}
	// Once the backoff is over and the cloud accepts, it fires.
	g.fail = nil
	o.now = start.Add(3 * time.Minute)
	l.state.Update(o.now, []clusterstate.GroupObservation{{ID: "g", Target: 1}})
	l.enforceSchedules(context.Background(), o, &Iteration{})
	if !slices.Equal(g.deltas, []int{1}) {
		t.Errorf("deltas %v after the backoff, want one node", g.deltas)
	}
}

// In shadow mode a raise is a dry-run scale-up, recorded once while it
// stands; the cloud is not asked.
func TestDryRunRaiseIsRecordedNotDone(t *testing.T) {
	g := &fakeGroup{id: "g", max: 10}
	l, o := scheduleLoop(t, g, map[string]string{
		nodeschedule.SchedulesKey: `[{name: now, nodeGroup: g, start: "0 9 * * *", duration: 2h, minSize: 3}]`})
	dry := act.NewDryRun(act.Deps{Events: l.events, Status: l.status, Clock: l.clock, Metrics: l.metrics})
	l.actuator = dry
	for range 2 {
		dry.Begin(context.Background())
		l.enforceSchedules(context.Background(), o, &Iteration{})
		dry.End(true, nil)
	}
	if len(g.deltas) != 0 || o.groups[0].target != 1 {
		t.Errorf("the cloud was asked for %v in dry run", g.deltas)
	}
	if got := dry.Standing(); !slices.Equal(got, []string{"scale_up/g/1->3"}) {
		t.Errorf("standing dry-run decisions %v", got)
	}
	if v := testutil.ToFloat64(l.metrics.DryRunDecisions.WithLabelValues("scale_up", "g")); v != 1 {
		t.Errorf("dry-run scale-up decisions %v, want 1 (once while it stands)", v)
	}
}

// A cloud call that never returns ends at the iteration's deadline and
// counts as the cloud refusing: the group is backed off and named among
// the iteration's failed groups, and its target is unchanged.
func TestHungIncreaseSizeEndsAtTheDeadlineAsAFailure(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	g := &fakeGroup{id: "g", max: 10, hang: hang}
	l, o := scheduleLoop(t, g, map[string]string{
		nodeschedule.SchedulesKey: `[{name: now, nodeGroup: g, start: "0 9 * * *", duration: 2h, minSize: 3}]`})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	report := &Iteration{}
	l.enforceSchedules(ctx, o, report)
	if ctx.Err() == nil {
		t.Fatal("enforceSchedules returned before the deadline, though the cloud never answered")
	}
	if !slices.Equal(report.failedGroups, []string{"g"}) || !l.state.Group("g").BackedOff || o.groups[0].target != 1 || report.scaledUp {
		t.Fatalf("after a hung IncreaseSize: failed groups %v, backed off %v, target %d, scaled up %v; want g failed and backed off, target 1",
			report.failedGroups, l.state.Group("g").BackedOff, o.groups[0].target, report.scaledUp)
	}
	if v := testutil.ToFloat64(l.metrics.FailedScaleUps.WithLabelValues("g", "cloudProviderError")); v != 1 {
		t.Errorf("failed scale-ups %v, want 1", v)
	}
}
