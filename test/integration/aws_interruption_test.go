package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider/aws"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/core/interrupt"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/faults"
)

// interruptionEnv is an AWS env with two full nodes of web pods under a
// PDB that allows one disruption, and an interruption queue.
type interruptionEnv struct {
	*awsEnv
	ns, queue string
}

func startInterruptionEnv(t *testing.T) *interruptionEnv {
	t.Helper()
	return startInterruptionEnvMin(t, 2)
}

// startInterruptionEnvMin is startInterruptionEnv with the ASG's minimum
// size min (at most 2; its desired capacity is 2 all the same).
func startInterruptionEnvMin(t *testing.T, min int) *interruptionEnv {
	t.Helper()
	e := &interruptionEnv{awsEnv: startAWSEnv(t, min, 6)}
	e.queue = e.asg + "-interruptions"
	e.srv.CreateQueue(e.queue)
	e.ns = newNamespace(t)
	if min < 2 {
		if err := e.srv.SetDesiredCapacity(e.asg, 2); err != nil {
			t.Fatal(err)
		}
	}
	// Instances launch and register as the emulator and the cluster get
	// CPU: minutes on a loaded machine.
	poll(t, 2*time.Minute, "the ASG's 2 nodes", func(ctx context.Context) (bool, error) {
		nodes, err := e.nodes(ctx)
		return len(nodes) == 2, err
	})
	// m5.xlarge holds 2 pods of 1.5 CPU: both nodes are full.
	e.webPods(t, e.ns, 4, "1500m", "1Gi")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := cluster(t).Client.PolicyV1().PodDisruptionBudgets(e.ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "4 web pods Ready and the PDB allowing 1 disruption", func(ctx context.Context) (bool, error) {
		got, err := cluster(t).Client.PolicyV1().PodDisruptionBudgets(e.ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.CurrentHealthy == 4 && got.Status.DisruptionsAllowed == 1, err
	})
	return e
}

// victim is a node of the pool with web pods, and its instance id.
func (e *interruptionEnv) victim(t *testing.T) (string, string) {
	t.Helper()
	nodes, err := e.nodes(context.Background())
	if err != nil || len(nodes) == 0 {
		t.Fatalf("no node to interrupt: %v", err)
	}
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	_, id, err := aws.ParseProviderID(nodes[0].Spec.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return nodes[0].Name, id
}

// replaced reports whether node is gone and the 4 web pods are Ready on
// other nodes.
func (e *interruptionEnv) replaced(ctx context.Context, t *testing.T, node string) (bool, error) {
	nodes, err := e.nodes(ctx)
	if err != nil || slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == node }) {
		return false, err
	}
	pods, err := cluster(t).Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	ready := 0
	for i := range pods.Items {
		if p := &pods.Items[i]; podReady(p) && p.Spec.NodeName != node {
			ready++
		}
	}
	return err == nil && ready == 4, err
}

// readyFloor samples the web pods Ready until stop, and returns the
// fewest seen.
func (e *interruptionEnv) readyFloor(t *testing.T) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	fewest := 1 << 30
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			pods, err := cluster(t).Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err == nil {
				ready := 0
				for i := range pods.Items {
					if p := &pods.Items[i]; p.DeletionTimestamp == nil && podReady(p) {
						ready++
					}
				}
				fewest = min(fewest, ready)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return func() int { cancel(); wg.Wait(); return fewest }
}

// TestAWSSpotInterruptionReplacesTheNodeBeforeItGoes runs tidal with
// --aws-interruption-queue against the emulator's SQS: a malformed
// message is counted and dropped; a spot interruption warning for a node
// has it tainted and cordoned, replacement capacity asked for at once
// (the ASG's desired capacity goes up before the node's pods have moved,
// the ASG backed off for the reclaim but the only one the pods fit),
// its pods moved within the PDB and the node deleted well before the two
// minutes end, and the message deleted only once the node was marked.
func TestAWSSpotInterruptionReplacesTheNodeBeforeItGoes(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startInterruptionEnv(t)
	tl := e.startTidal(t, e.tidalFlags("--aws-interruption-queue="+e.queue)...)

	if _, err := e.srv.SendMessage(e.queue, []byte(`{"Type":"Notification","Message":"not an EventBridge event"}`)); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the malformed message counted and deleted", func(ctx context.Context) (bool, error) {
		n, err := metricValue(tl.Address, `tidal_interruption_messages_total{kind="malformed"}`)
		msgs, deleted := e.srv.Messages(e.queue)
		return n == 1 && len(msgs) == 0 && deleted == 1, err
	})

	name, instance := e.victim(t)
	floor := e.readyFloor(t)
	sent := time.Now()
	if _, err := e.srv.SendMessage(e.queue, e.srv.SpotInterruptionWarning(instance, sent)); err != nil {
		t.Fatal(err)
	}
	var markedAt time.Time
	poll(t, 30*time.Second, "node "+name+" tainted, cordoned and annotated", func(ctx context.Context) (bool, error) {
		n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, annotated := n.Annotations[interrupt.Annotation]
		hasTaint := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == scaledown.ToBeDeletedTaint })
		markedAt = time.Now()
		return annotated && hasTaint && n.Spec.Unschedulable, nil
	})
	var grewAt time.Time
	poll(t, 30*time.Second, "the ASG asked for a replacement", func(context.Context) (bool, error) {
		for _, r := range e.srv.RequestsOf("SetDesiredCapacity") {
			if r.Params.Get("AutoScalingGroupName") == e.asg && r.Params.Get("DesiredCapacity") == "3" {
				grewAt = r.Time
				return true, nil
			}
		}
		return false, nil
	})
	// The ASG is backed off for the reclaim, and grown all the same: no
	// other group can run the pods, so it is their last resort.
	if v, err := metricValue(tl.Address, fmt.Sprintf(`tidal_node_group_backoff_status{node_group=%q}`, e.asg)); err != nil || v != 1 {
		t.Errorf("backoff status of %s %v (%v), want 1 while EC2 reclaims its spot instance", e.asg, v, err)
	}
	poll(t, 2*time.Minute, "node "+name+" gone and 4 web pods Ready elsewhere", func(ctx context.Context) (bool, error) {
		return e.replaced(ctx, t, name)
	})
	done := time.Now()
	fewest := floor()
	readyAfter, _ := metricValue(tl.Address, `tidal_interruption_replacement_ready_seconds_sum{kind="spot-interruption"}`)
	t.Logf("spot warning sent; node marked (seen by the test) after %v, replacement asked for after %v, capacity for its pods Ready after %.2fs (tidal's metric), node drained and gone after %v; fewest web pods Ready: %d",
		markedAt.Sub(sent).Round(time.Millisecond), grewAt.Sub(sent).Round(time.Millisecond), readyAfter, done.Sub(sent).Round(time.Millisecond), fewest)
	if fewest < 3 {
		t.Errorf("%d web pods Ready at one point: the PDB (minAvailable 3) was violated", fewest)
	}
	if done.Sub(sent) >= 2*time.Minute {
		t.Errorf("the node was drained and deleted %v after the warning, not within its two minutes", done.Sub(sent))
	}
	terms := e.srv.RequestsOf("TerminateInstanceInAutoScalingGroup")
	if len(terms) != 1 || terms[0].Params.Get("InstanceId") != instance || terms[0].Params.Get("ShouldDecrementDesiredCapacity") != "true" {
		t.Fatalf("terminations %+v, want the interrupted instance %s, decrementing the desired capacity", terms, instance)
	}
	if g := e.group(t); g.DesiredCapacity != 2 {
		t.Errorf("desired capacity %d after the replacement, want 2 (grown for the replacement, shrunk by the termination)", g.DesiredCapacity)
	}
	var deletedAt time.Time
	for _, r := range e.srv.RequestsOf("DeleteMessage") {
		deletedAt = r.Time
	}
	if msgs, deleted := e.srv.Messages(e.queue); len(msgs) != 0 || deleted != 2 {
		t.Fatalf("queue holds %+v, %d deleted; want the warning deleted once acted on", msgs, deleted)
	}
	if deletedAt.After(done) {
		t.Errorf("the warning was deleted at %v, after the node was replaced (%v): it is deleted once the node is marked", deletedAt, done)
	}
	for metric, want := range map[string]float64{
		`tidal_interruption_messages_total{kind="spot-interruption"}`:                             1,
		fmt.Sprintf(`tidal_replaced_nodes_total{cause="spot-interruption",node_group=%q}`, e.asg): 1,
		`tidal_interruption_marked_seconds_count`:                                                 1,
		`tidal_interruption_replacement_ready_seconds_count{kind="spot-interruption"}`:            1,
	} {
		if got, err := metricValue(tl.Address, metric); err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", metric, got, err, want)
		}
	}
	events, err := cluster(t).Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=NodeInterrupted,involvedObject.name=" + name})
	if err != nil || len(events.Items) == 0 {
		t.Errorf("no NodeInterrupted event on node %s (%v)", name, err)
	}
	e.checkHooks(t)
}

// TestAWSInterruptionOutlivesATidalThatDidNotAct: a tidal receives a spot
// warning but cannot mark the node (the API server fails its updates of
// that node): the message stays in the queue, no capacity is asked for on
// its account; tidal stops, the next tidal receives the message again,
// acts on it and deletes it.
func TestAWSInterruptionOutlivesATidalThatDidNotAct(t *testing.T) {
	parallel(t)
	e := startInterruptionEnv(t)
	name, instance := e.victim(t)
	failMarks := faults.New(1, faults.Rule{Rate: 1, Kinds: []faults.Kind{faults.InternalError},
		Match: func(req *http.Request, _ []byte) bool {
			return req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/nodes/"+name)
		}})
	flags := e.tidalFlags("--aws-interruption-queue=" + e.queue)
	first := e.startTidalWith(t, []app.Option{app.WithTransport(failMarks.Wrap)}, flags...)
	if _, err := e.srv.SendMessage(e.queue, e.srv.SpotInterruptionWarning(instance, time.Now())); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the first tidal to receive the warning", func(context.Context) (bool, error) {
		n, err := metricValue(first.Address, `tidal_interruption_messages_total{kind="spot-interruption"}`)
		return n == 1, err
	})
	waitIterations(t, first, 3)
	if faulted, _ := failMarks.Counts(); faulted[faults.InternalError] == 0 {
		t.Fatal("the first tidal never tried to mark the node")
	}
	if msgs, deleted := e.srv.Messages(e.queue); len(msgs) != 1 || deleted != 0 {
		t.Fatalf("queue holds %+v, %d deleted, while the node could not be marked: want the warning kept", msgs, deleted)
	}
	for _, r := range e.srv.RequestsOf("SetDesiredCapacity") {
		t.Fatalf("capacity asked for on account of a node that was not marked: %+v", r)
	}
	if err := first.Stop(t); err != nil {
		t.Fatal(err)
	}

	second := e.startTidal(t, flags...)
	poll(t, 90*time.Second, "the next tidal to mark node "+name+" and delete the warning", func(ctx context.Context) (bool, error) {
		n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, annotated := n.Annotations[interrupt.Annotation]
		msgs, deleted := e.srv.Messages(e.queue)
		return annotated && n.Spec.Unschedulable && len(msgs) == 0 && deleted == 1, nil
	})
	poll(t, 2*time.Minute, "node "+name+" replaced", func(ctx context.Context) (bool, error) {
		n, err := metricValue(second.Address, fmt.Sprintf(`tidal_replaced_nodes_total{cause="spot-interruption",node_group=%q}`, e.asg))
		return n == 1, err
	})
	e.checkHooks(t)
}

// TestAWSRebalanceAndStateChangeReplaceNodes: a rebalance recommendation
// (no deadline) has its node replaced with the PDB fully honoured; an
// instance stopping has its node replaced at once; a state change to
// running is counted as ignored and dropped.
func TestAWSRebalanceAndStateChangeReplaceNodes(t *testing.T) {
	parallel(t)
	e := startInterruptionEnv(t)
	tl := e.startTidal(t, e.tidalFlags("--aws-interruption-queue="+e.queue)...)
	for _, step := range []struct {
		cause string
		body  func(instance string) []byte
	}{
		{"rebalance-recommendation", func(id string) []byte { return e.srv.RebalanceRecommendation(id, time.Now()) }},
		{"state-change", func(id string) []byte { return e.srv.StateChange(id, "stopping", time.Now()) }},
	} {
		name, instance := e.victim(t)
		floor := e.readyFloor(t)
		if _, err := e.srv.SendMessage(e.queue, e.srv.StateChange(instance, "running", time.Now())); err != nil {
			t.Fatal(err)
		}
		if _, err := e.srv.SendMessage(e.queue, step.body(instance)); err != nil {
			t.Fatal(err)
		}
		poll(t, 2*time.Minute, step.cause+": node "+name+" replaced and 4 web pods Ready elsewhere", func(ctx context.Context) (bool, error) {
			n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_replaced_nodes_total{cause=%q,node_group=%q}`, step.cause, e.asg))
			if err != nil || n != 1 {
				return false, err
			}
			return e.replaced(ctx, t, name)
		})
		fewest := floor()
		t.Logf("%s: fewest web pods Ready %d", step.cause, fewest)
		if step.cause == "rebalance-recommendation" && fewest < 3 {
			t.Errorf("%d web pods Ready at one point while replacing a node without deadline: the PDB (minAvailable 3) was violated", fewest)
		}
	}
	if n, err := metricValue(tl.Address, `tidal_interruption_messages_total{kind="ignored"}`); err != nil || n != 2 {
		t.Errorf("ignored messages %v (%v), want the 2 state changes to running", n, err)
	}
	if msgs, deleted := e.srv.Messages(e.queue); len(msgs) != 0 || deleted != 4 {
		t.Errorf("queue holds %+v, %d deleted; want all 4 messages deleted", msgs, deleted)
	}
	e.checkHooks(t)
}

// TestAWSExpiredNodeReplacedWithNewCapacityReadyFirst runs tidal with
// --max-node-lifetime: a node older than it is replaced only once a new
// node is Ready for its pods; then it is cordoned, drained within the PDB
// and deleted.
func TestAWSExpiredNodeReplacedWithNewCapacityReadyFirst(t *testing.T) {
	parallel(t)
	const lifetime = 20 * time.Second
	e := startInterruptionEnv(t)
	originals, err := e.nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range originals {
		time.Sleep(time.Until(n.CreationTimestamp.Add(lifetime + time.Second)))
	}
	renewed(t, e, originals, interrupt.Expired, 1, fmt.Sprintf("--max-node-lifetime=%v", lifetime))
}

// TestAWSDriftedNodesReplacedOneAtATime runs tidal with
// --replace-drifted-nodes after the ASG's launch template got a new
// version ($Latest): both nodes, launched from the old one, are replaced,
// one at a time, each once a new node is Ready; the new nodes, from the
// new version, stay.
func TestAWSDriftedNodesReplacedOneAtATime(t *testing.T) {
	parallel(t)
	e := startInterruptionEnv(t)
	originals, err := e.nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.AddLaunchTemplateVersion(e.lt, awstest.LaunchTemplateData{InstanceType: "m5.xlarge", ImageID: "ami-0fedcba9876543210", RootVolumeGiB: 80}); err != nil {
		t.Fatal(err)
	}
	renewed(t, e, originals, interrupt.Drifted, 2, "--replace-drifted-nodes")
	if g := e.group(t); g.DesiredCapacity != 2 {
		t.Errorf("desired capacity %d once both nodes were renewed, want 2", g.DesiredCapacity)
	}
}

// TestAWSNodesReplacedWhenTheirAMIParameterMoves: the SSM parameter of the
// launch template's image id moves to a new AMI, the version staying the
// same; while the parameter cannot be read nothing is done, then both
// nodes are replaced, one after the other, new capacity Ready first.
func TestAWSNodesReplacedWhenTheirAMIParameterMoves(t *testing.T) {
	parallel(t)
	e := startInterruptionEnv(t)
	originals, err := e.nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.srv.SetParameter(e.imageParam, "ami-0fedcba9876543210")
	// A role without ssm:GetParameter at first (not retried): three
	// refreshes read no AMI the group launches.
	const failures = 3
	e.srv.FailRequests("GetParameter", failures, awstest.APIError{HTTPStatus: 400, Code: "AccessDeniedException",
		Message: "not authorized to perform: ssm:GetParameter"})
	renewed(t, e, originals, interrupt.Drifted, 2, "--replace-drifted-nodes")
	var firstRead time.Time
	failed := 0
	for _, r := range e.srv.RequestsOf("GetParameter") {
		if r.Error != "" {
			failed++
		} else if firstRead.IsZero() {
			firstRead = r.Time
		}
	}
	if failed != failures || firstRead.IsZero() {
		t.Fatalf("%d GetParameter calls failed, want %d, then one that succeeded (at %v)", failed, failures, firstRead)
	}
	for _, action := range []string{"SetDesiredCapacity", "TerminateInstanceInAutoScalingGroup"} {
		for _, r := range e.srv.RequestsOf(action) {
			if r.Time.Before(firstRead) {
				t.Errorf("%s %v at %v, before the AMI the group launches could be read (%v)", action, r.Params, r.Time, firstRead)
			}
		}
	}
}

// renewed starts tidal with flags and checks that want of the original
// nodes are replaced for kind, each marked only once a node that is not
// an original is Ready and while no other node is marked, with no PDB
// violated. A drifted node's replacement is never marked; an expired
// one's may be, once it is past the lifetime in turn.
func renewed(t *testing.T, e *interruptionEnv, originals []corev1.Node, kind string, want int, flags ...string) {
	t.Helper()
	known := map[string]bool{}
	for _, n := range originals {
		known[n.Name] = true
	}
	floor := e.readyFloor(t)
	tl := e.startTidal(t, e.tidalFlags(flags...)...)
	seen := map[string]bool{}
	poll(t, 3*time.Minute, fmt.Sprintf("%d original node(s) replaced as %s", want, kind), func(ctx context.Context) (bool, error) {
		nodes, err := e.nodes(ctx)
		if err != nil {
			return false, err
		}
		newReady, marked := 0, 0
		for _, n := range nodes {
			if !known[n.Name] && testenvNodeReady(&n) {
				newReady++
			}
			m, found, _ := interrupt.MarkOf(&n)
			if !found {
				continue
			}
			marked++
			switch {
			case m.Kind != kind:
				return false, fmt.Errorf("node %s marked %q, want %q", n.Name, m.Kind, kind)
			case !known[n.Name] && kind == interrupt.Drifted:
				return false, fmt.Errorf("node %s, a replacement from the new launch template version, was marked %s", n.Name, m.Detail)
			case !known[n.Name]:
				// A replacement past its lifetime in turn.
				continue
			case !seen[n.Name] && newReady == 0:
				return false, fmt.Errorf("node %s marked as %s before any new node was Ready", n.Name, kind)
			}
			seen[n.Name] = true
		}
		if marked > 1 {
			return false, fmt.Errorf("%d nodes of one group marked at once, want one at a time", marked)
		}
		n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_replaced_nodes_total{cause=%q,node_group=%q}`, kind, e.asg))
		return err == nil && int(n) >= want, err
	})
	poll(t, time.Minute, "4 web pods Ready", func(ctx context.Context) (bool, error) { return e.replaced(ctx, t, "") })
	if fewest := floor(); fewest < 3 {
		t.Errorf("%d web pods Ready at one point: the PDB (minAvailable 3) was violated", fewest)
	}
	e.checkHooks(t)
}

func testenvNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestAWSSoonerDeadlineEndsADrainUnderWay: a rebalance recommendation
// (no deadline) has a node drained while its PDB allows no disruption, so
// the drain waits; then the instance shuts down (a state change, due at
// once): the drain under way ends and the node is deleted within seconds,
// not after --max-pod-eviction-time (2m).
func TestAWSSoonerDeadlineEndsADrainUnderWay(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startInterruptionEnv(t)
	pdbs := cluster(t).Client.PolicyV1().PodDisruptionBudgets(e.ns)
	pdb, err := pdbs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(4))
	if _, err := pdbs.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the PDB allowing no disruption", func(ctx context.Context) (bool, error) {
		got, err := pdbs.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Generation == got.Status.ObservedGeneration && got.Status.DisruptionsAllowed == 0, err
	})
	tl := e.startTidal(t, e.tidalFlags("--aws-interruption-queue="+e.queue)...)
	name, instance := e.victim(t)
	if _, err := e.srv.SendMessage(e.queue, e.srv.RebalanceRecommendation(instance, time.Now())); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "node "+name+" marked and its drain held up by the PDB", func(ctx context.Context) (bool, error) {
		n, err := metricValue(tl.Address, `tidal_evicted_pods_total{eviction_result="retried"}`)
		return n >= 2, err
	})
	if nodes, err := e.nodes(ctx); err != nil || !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == name }) {
		t.Fatalf("node %s gone while its PDB allowed no disruption and no deadline had come (err %v)", name, err)
	}
	shutdown := time.Now()
	if _, err := e.srv.SendMessage(e.queue, e.srv.StateChange(instance, "shutting-down", shutdown)); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the instance of node "+name+" terminated by tidal", func(context.Context) (bool, error) {
		for _, r := range e.srv.RequestsOf("TerminateInstanceInAutoScalingGroup") {
			if r.Params.Get("InstanceId") == instance {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("node deleted %v after the instance was told shutting down", time.Since(shutdown).Round(time.Millisecond))
	e.checkHooks(t)
}
