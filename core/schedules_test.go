package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

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
	l := &NodeLoop{events: newEventDeduper(rec, clocktesting.NewFakeClock(time.Unix(0, 0)), false),
		sched: &schedules{config: nodeschedule.Parse(cm.Data, nil)}}
	status := l.reportScheduleProblems(context.Background(), cm)
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
