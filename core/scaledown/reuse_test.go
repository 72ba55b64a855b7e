package scaledown

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// downChurn is a generated cluster, as tidal's informers hold it, that
// random changes are made to, as informer events and the node loop's own
// state bring them to the scale-down plan.
type downChurn struct {
	t         *testing.T
	r         *rand.Rand
	c         *benchgen.Cluster
	snap      *simulator.Snapshot
	groups    map[string]GroupSize
	unready   map[string]bool
	deleting  map[string]bool
	threshold map[string]float64
	pdbs      []*policyv1.PodDisruptionBudget
	arriving  []simulator.Placed
	made      int
}

// TestIncrementalPlanIsTheWholePlan is the property of DecideFrom: after
// any sequence of changes (running pods added to a node, removed, or
// replaced by an equal object with a new resource version; nodes added,
// removed, cordoned or uncordoned, not ready, replaced by an equal object
// with a new heartbeat; nodes starting or ending their deletion; PDBs
// added, changed and removed; pending pods arriving on a node or no
// longer; group sizes and thresholds changed), the plan made from the last
// one's Reuse is the plan made from scratch: the same unneeded nodes with
// the same pods, the same unremovable ones for the same reasons, the same
// room reserved. Clusters are benchgen's, as the API server stores them
// (default tolerations with tolerationSeconds, a random kube-api-access
// volume per new pod, managed fields), candidates in a new lister order
// every time.
func TestIncrementalPlanIsTheWholePlan(t *testing.T) {
	ctx := context.Background()
	reused, searched, changes := 0, 0, 0
	for seed := range uint64(4) {
		p := benchgen.S1()
		p.Seed, p.N, p.M, p.P, p.G, p.K = 200+seed, 60, 14, 60, 6, 4
		c := benchload.Cluster(t, p)
		ch := &downChurn{t: t, r: rand.New(rand.NewPCG(seed, 29)), c: c, groups: map[string]GroupSize{}, unready: map[string]bool{},
			deleting: map[string]bool{}, threshold: map[string]float64{}}
		ch.snap = benchload.Snapshot(t, c, ch.r)
		checker := benchload.Checker(t, ch.snap)
		for _, g := range c.NodeGroups {
			ch.groups[g.ID] = GroupSize{Target: g.TargetSize, Min: g.MinSize}
		}
		owners := Owners{Kinds: map[string]bool{"ReplicaSet": true}, Existing: map[OwnerKey]bool{}}
		for _, r := range c.ReplicaSets {
			owners.Existing[OwnerKey{Kind: "ReplicaSet", Namespace: r.Namespace, Name: r.Name}] = true
		}
		var last Reuse
		var history []string
		for step := range 40 {
			if step > 0 {
				for range 1 + ch.r.IntN(2) {
					history = append(history, ch.change())
					changes++
				}
			}
			in := ch.input(checker, owners)
			inc, next, err := DecideFrom(ctx, in, last)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Decide(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := describePlan(inc), describePlan(whole); a != b {
				t.Fatalf("seed %d, step %d, after %s:\nthe incremental plan (%d removals taken again) differs from scratch:\n%s",
					seed, step, strings.Join(history[max(0, len(history)-3):], "; "), inc.ReusedRemovals, firstDifference(a, b))
			}
			simulated := 0
			for _, s := range next.steps {
				if s.simulated {
					simulated++
				}
			}
			reused += inc.ReusedRemovals
			searched += simulated - inc.ReusedRemovals
			last = next
		}
	}
	// The property means something only if removals were taken again and
	// simulated afresh after changes.
	if reused == 0 || searched == 0 {
		t.Fatalf("%d removals taken again, %d simulated afresh: the changes do not exercise the reuse", reused, searched)
	}
	t.Logf("%d changes: %d removals taken again, %d simulated afresh, the same plans as from scratch", changes, reused, searched)
}

// input is the plan's input for the cluster as it is now, candidates in a
// new lister order.
func (ch *downChurn) input(checker *simulator.Checker, owners Owners) Input {
	in := Input{Checker: checker, Groups: maps.Clone(ch.groups), Owners: owners, Now: time.Unix(1_800_000_000, 0),
		Rules:    RuleOptions{SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true, SkipNodesWithCustomControllerPods: true},
		Deleting: slices.Sorted(maps.Keys(ch.deleting)), PDBs: slices.Clone(ch.pdbs), Arriving: slices.Clone(ch.arriving)}
	for _, ni := range benchgen.ListerOrder(ch.r, slices.Clone(ch.snap.Infos())) {
		n := ni.Node()
		if ch.deleting[n.Name] {
			continue
		}
		th, ok := ch.threshold[n.Name]
		if !ok {
			th = 0.55
		}
		in.Candidates = append(in.Candidates, Candidate{Name: n.Name, Group: n.Labels[benchgen.LabelNodeGroup], Threshold: th,
			IgnoreDaemonSetsUtilization: true, Unready: ch.unready[n.Name]})
	}
	return in
}

// change makes one random change and says what it was.
func (ch *downChurn) change() string {
	infos := ch.snap.Infos()
	ni := infos[ch.r.IntN(len(infos))].(*framework.NodeInfo)
	name := ni.Node().Name
	switch k := ch.r.IntN(16); {
	case k < 3:
		var like *corev1.Pod
		if pods := ni.Pods; len(pods) > 0 {
			like = pods[ch.r.IntN(len(pods))].GetPod()
		} else {
			like = ch.c.RunningPods[ch.r.IntN(len(ch.c.RunningPods))]
		}
		p := ch.replica(like)
		p.Spec.NodeName = name
		ch.must(ch.snap.AddPod(ch.info(p), name))
		return "pod " + p.Name + " bound to " + name
	case k < 5:
		if len(ni.Pods) == 0 {
			return "nothing"
		}
		pod := ni.Pods[ch.r.IntN(len(ni.Pods))].GetPod()
		ch.must(ch.snap.RemovePod(pod, name))
		return "pod " + pod.Name + " removed from " + name
	case k == 5:
		// A status update: an equal pod, a new version.
		if len(ni.Pods) == 0 {
			return "nothing"
		}
		pod := ni.Pods[ch.r.IntN(len(ni.Pods))].GetPod()
		ch.must(ch.snap.RemovePod(pod, name))
		p := pod.DeepCopy()
		p.ResourceVersion = ch.version()
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "Probe", LastProbeTime: metav1.Now()})
		ch.must(ch.snap.AddPod(ch.info(p), name))
		return "pod " + p.Name + " updated alike"
	case k == 6:
		n := ni.Node().DeepCopy()
		ch.made++
		n.Name, n.UID, n.ResourceVersion = fmt.Sprintf("added-%d", ch.made), types.UID(fmt.Sprintf("uid-node-%d", ch.made)), ch.version()
		n.Labels[corev1.LabelHostname] = n.Name
		_, err := ch.snap.AddNode(n)
		ch.must(err)
		return "node " + n.Name + " added"
	case k == 7 && len(infos) > 20:
		ch.must(ch.snap.RemoveNode(name))
		delete(ch.deleting, name)
		ch.arriving = slices.DeleteFunc(ch.arriving, func(a simulator.Placed) bool { return a.Node == name })
		return "node " + name + " removed"
	case k == 8:
		n := ni.Node().DeepCopy()
		n.ResourceVersion = ch.version()
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "Heartbeat", LastHeartbeatTime: metav1.Now()})
		ni.SetNode(n)
		ch.snap.Touch()
		return "node " + name + " updated alike"
	case k == 9:
		n := ni.Node().DeepCopy()
		n.ResourceVersion, n.Spec.Unschedulable = ch.version(), !n.Spec.Unschedulable
		ni.SetNode(n)
		ch.snap.Touch()
		return fmt.Sprintf("node %s unschedulable: %v", name, n.Spec.Unschedulable)
	case k == 10:
		ch.unready[name] = !ch.unready[name]
		return fmt.Sprintf("node %s unready: %v", name, ch.unready[name])
	case k == 11:
		ch.deleting[name] = !ch.deleting[name]
		if !ch.deleting[name] {
			delete(ch.deleting, name)
		}
		return fmt.Sprintf("node %s being deleted: %v", name, ch.deleting[name])
	case k == 12:
		return ch.pdbChange()
	case k == 13:
		if len(ch.arriving) > 0 && ch.r.IntN(2) == 0 {
			i := ch.r.IntN(len(ch.arriving))
			a := ch.arriving[i]
			ch.arriving = slices.Delete(ch.arriving, i, i+1)
			return "pod " + a.Info.GetPod().Name + " no longer arriving"
		}
		p := ch.replica(ch.c.PendingPods[ch.r.IntN(len(ch.c.PendingPods))])
		ch.arriving = append(ch.arriving, simulator.Placed{Info: ch.info(p), Node: name})
		return "pod " + p.Name + " arriving on " + name
	case k == 14:
		id := ch.c.NodeGroups[ch.r.IntN(len(ch.c.NodeGroups))].ID
		g := ch.groups[id]
		g.Target = max(g.Min, g.Target+ch.r.IntN(5)-2)
		ch.groups[id] = g
		return fmt.Sprintf("group %s at %d", id, g.Target)
	default:
		ch.threshold[name] = 0.3 + 0.1*float64(ch.r.IntN(6))
		return fmt.Sprintf("node %s threshold %.1f", name, ch.threshold[name])
	}
}

// pdbChange adds a PDB for a running app, changes one's disruptions
// allowed, or removes one.
func (ch *downChurn) pdbChange() string {
	if len(ch.pdbs) > 0 && ch.r.IntN(3) > 0 {
		i := ch.r.IntN(len(ch.pdbs))
		if ch.r.IntN(2) == 0 {
			name := ch.pdbs[i].Name
			ch.pdbs = slices.Delete(slices.Clone(ch.pdbs), i, i+1)
			return "PDB " + name + " removed"
		}
		b := ch.pdbs[i].DeepCopy()
		b.ResourceVersion, b.Status.DisruptionsAllowed = ch.version(), int32(ch.r.IntN(4))
		ch.pdbs = slices.Clone(ch.pdbs)
		ch.pdbs[i] = b
		return fmt.Sprintf("PDB %s allows %d", b.Name, b.Status.DisruptionsAllowed)
	}
	pod := ch.c.RunningPods[ch.r.IntN(len(ch.c.RunningPods))]
	ch.made++
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pdb-%d", ch.made), Namespace: pod.Namespace, ResourceVersion: ch.version()},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{IntVal: 1},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pod.Labels["app"]}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: int32(ch.r.IntN(6))},
	}
	ch.pdbs = append(slices.Clone(ch.pdbs), b)
	return fmt.Sprintf("PDB %s for app %s allows %d", b.Name, pod.Labels["app"], b.Status.DisruptionsAllowed)
}

// replica is a new replica of like's workload (simtest.NewReplica), not
// bound yet.
func (ch *downChurn) replica(like *corev1.Pod) *corev1.Pod {
	ch.made++
	p := simtest.NewReplica(like, ch.made, ch.r)
	p.Spec.NodeName, p.Status.Phase = "", corev1.PodRunning
	return p
}

func (ch *downChurn) info(p *corev1.Pod) *framework.PodInfo {
	pi, err := framework.NewPodInfo(p)
	ch.must(err)
	return pi
}

func (ch *downChurn) version() string { ch.made++; return fmt.Sprint(1_000_000 + ch.made) }

func (ch *downChurn) must(err error) {
	if err != nil {
		ch.t.Fatal(err)
	}
}

// describePlan is everything a plan says, pods by UID.
func describePlan(p *Plan) string {
	var b strings.Builder
	uids := func(pods []*corev1.Pod) []types.UID {
		out := make([]types.UID, len(pods))
		for i, p := range pods {
			out[i] = p.UID
		}
		return out
	}
	for _, u := range p.Unneeded {
		fmt.Fprintf(&b, "unneeded %s (%s) %.6f unready %v: move %v, daemonsets %v\n", u.Node, u.Group, u.Utilization, u.Unready,
			uids(u.Pods.ToMove), uids(u.Pods.DaemonSet))
	}
	for _, u := range p.Unremovable {
		fmt.Fprintf(&b, "unremovable %s %.6f: %s\n", u.Node, u.Utilization, u)
	}
	fmt.Fprintf(&b, "reserved %d, unreserved %v\n", p.Reserved, uids(p.Unreserved))
	return b.String()
}

// firstDifference shows the first lines where two descriptions differ.
func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	i := 0
	for i < len(la) && i < len(lb) && la[i] == lb[i] {
		i++
	}
	line := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(nothing)"
	}
	return fmt.Sprintf("line %d, incremental: %s\nfrom scratch:       %s", i+1, line(la), line(lb))
}
