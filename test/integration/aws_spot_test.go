package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/core/interrupt"
)

// TestAWSSpotInterruptionReplacesFromAnotherGroup: two ASGs the web pods
// fit, a spot one that the priority expander prefers and that runs the
// two full nodes, and an empty on-demand one. A spot interruption warning
// for a node of the spot ASG backs that ASG off as a capacity error
// would: the replacement capacity for the node's pods is asked of the
// on-demand ASG in the same iteration, the spot ASG is not grown, and the
// node is drained within the PDB and deleted before the two minutes end.
func TestAWSSpotInterruptionReplacesFromAnotherGroup(t *testing.T) {
	parallel(t)
	// Min 0: deleting the interrupted node without a replacement in its
	// own ASG keeps the ASG within its bounds.
	e := startInterruptionEnvMin(t, 0)
	spot, onDemand := e.asg, e.asg+"-od"
	e.addPool(t, onDemand, 4)
	setPriorities(t, "tidal-priority-expander", fmt.Sprintf("100:\n  - ^%s$\n1:\n  - ^%s$\n", spot, onDemand))
	tl := e.startTidal(t, e.tidalFlags("--aws-interruption-queue="+e.queue, "--expander=priority")...)

	name, instance := e.victim(t)
	floor := e.readyFloor(t)
	sent := time.Now()
	if _, err := e.srv.SendMessage(e.queue, e.srv.SpotInterruptionWarning(instance, sent)); err != nil {
		t.Fatal(err)
	}
	var grewAt time.Time
	poll(t, 30*time.Second, "the on-demand ASG asked for the replacement", func(context.Context) (bool, error) {
		for _, r := range e.srv.RequestsOf("SetDesiredCapacity") {
			if r.Params.Get("AutoScalingGroupName") == onDemand && r.Params.Get("DesiredCapacity") == "1" {
				grewAt = r.Time
				return true, nil
			}
		}
		return false, nil
	})
	backedOff, err := metricValue(tl.Address, fmt.Sprintf(`tidal_node_group_backoff_status{node_group=%q}`, spot))
	if err != nil || backedOff != 1 {
		t.Errorf("backoff status of the spot ASG %s: %v (%v), want 1 while its instance is reclaimed", spot, backedOff, err)
	}
	poll(t, 30*time.Second, "the status ConfigMap showing "+name+" replaced and "+spot+" backed off for the reclaim", func(ctx context.Context) (bool, error) {
		st, err := statusNow(ctx, t)
		if err != nil {
			return false, err
		}
		replacing := slices.ContainsFunc(st.ClusterWide.Replacing, func(r core.ReplacingEntry) bool {
			return r.Node == name && r.NodeGroup == spot && r.Cause == "spot-interruption" && r.State == core.ReplacingDraining && r.Deadline != ""
		})
		backedOff := slices.ContainsFunc(st.NodeGroups, func(g core.NodeGroupStatus) bool {
			return g.Name == spot && g.Health == "BackedOff" && strings.Contains(g.Reason, interrupt.SpotReclaimed)
		})
		return replacing && backedOff, nil
	})
	poll(t, 2*time.Minute, "node "+name+" gone and 4 web pods Ready elsewhere", func(ctx context.Context) (bool, error) {
		return e.replaced(ctx, t, name)
	})
	done := time.Now()
	fewest := floor()
	t.Logf("spot warning sent; the on-demand ASG grown after %v, the node drained and gone after %v; fewest web pods Ready: %d",
		grewAt.Sub(sent).Round(time.Millisecond), done.Sub(sent).Round(time.Millisecond), fewest)
	if fewest < 3 {
		t.Errorf("%d web pods Ready at one point: the PDB (minAvailable 3) was violated", fewest)
	}
	if done.Sub(sent) >= 2*time.Minute {
		t.Errorf("the node was drained and deleted %v after the warning, not within its two minutes", done.Sub(sent))
	}
	for _, r := range e.srv.RequestsOf("SetDesiredCapacity") {
		if r.Params.Get("AutoScalingGroupName") == spot {
			t.Errorf("the spot ASG %s, whose instance EC2 reclaims, was grown: %v", spot, r.Params)
		}
	}
	od, _ := e.srv.Group(onDemand)
	inOD := map[string]bool{}
	for _, in := range od.Instances {
		inOD[in.ProviderID()] = true
	}
	nodes, err := e.nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return inOD[n.Spec.ProviderID] }) {
		t.Errorf("no node of the on-demand ASG %s among %d nodes: %+v", onDemand, len(nodes), od)
	}
	if g := e.group(t); g.DesiredCapacity != 1 {
		t.Errorf("spot ASG desired capacity %d, want 1 (2 less the reclaimed node)", g.DesiredCapacity)
	}
	events, err := eventsFor(t, context.Background(), e.ns, "TriggeredScaleUp")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if strings.Contains(ev.Message, "{"+spot+" ") {
			t.Errorf("a pod was told of a scale-up of the reclaimed spot ASG: %s", ev.Message)
		}
	}
	e.checkHooks(t)
}
