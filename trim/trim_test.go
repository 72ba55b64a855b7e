package trim_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/trim"
)

// readAnnotations are the annotation keys tidal reads on pods and nodes
// (Cluster Autoscaler's and its own), each with a value that changes what
// tidal does.
var readAnnotations = map[string]string{
	scaledown.SafeToEvictAnnotation:                  "false",
	scaledown.SafeToEvictLocalVolumesAnnotation:      "scratch",
	scaledown.ScaleDownDisabledAnnotation:            "true",
	core.PodScaleUpDelayAnnotation:                   "10m",
	corev1.MirrorPodAnnotationKey:                    "mirror",
	core.AheadOfAnnotation:                           "default/web",
	core.HeadroomOfAnnotation:                        "default/web",
	core.HeadroomAnnotation:                          "2",
	"cluster-autoscaler.kubernetes.io/daemonset-pod": "true",
	scalein.CostAnnotation:                           "10",
	scalein.OwnedAnnotation:                          "true",
}

// unreadAnnotations are annotations real pods and nodes carry that tidal
// never reads.
var unreadAnnotations = map[string]string{
	"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod"}`,
	"kubectl.kubernetes.io/restartedAt":                "2026-01-01T00:00:00Z",
	"prometheus.io/scrape":                             "true",
	"node.alpha.kubernetes.io/ttl":                     "0",
	"eviltidal.dev/x":                                  "1",
	"tidal.devices.example/x":                          "1",
}

func TestKeepAnnotation(t *testing.T) {
	for k := range readAnnotations {
		if !trim.KeepAnnotation(k) {
			t.Errorf("KeepAnnotation(%q) = false: tidal reads it", k)
		}
	}
	for k := range unreadAnnotations {
		if trim.KeepAnnotation(k) {
			t.Errorf("KeepAnnotation(%q) = true: tidal never reads it", k)
		}
	}
}

// richPod is a stored pod with every kind of annotation, containers
// with everything a real one has, a sidecar, a resized container and
// local storage.
func richPod(t *testing.T) *corev1.Pod {
	t.Helper()
	c := benchgen.Generate(benchgen.S1())
	if err := c.Store(benchgen.StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	p := c.RunningPods[0]
	p.Annotations = maps.Clone(readAnnotations)
	maps.Copy(p.Annotations, unreadAnnotations)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}
	ctr := &p.Spec.Containers[0]
	ctr.Command, ctr.Args, ctr.WorkingDir = []string{"/app"}, []string{"--port=8080"}, "/srv"
	ctr.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
	ctr.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	ctr.LivenessProbe, ctr.ReadinessProbe, ctr.StartupProbe = probe, probe.DeepCopy(), probe.DeepCopy()
	ctr.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	ctr.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
	sidecar := ctr.DeepCopy()
	sidecar.Name, sidecar.RestartPolicy = "proxy", ptr.To(corev1.ContainerRestartPolicyAlways)
	sidecar.Ports = nil
	p.Spec.InitContainers = []corev1.Container{*sidecar}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	// The kubelet resized the container up: the scheduler counts the
	// allocated request.
	st := &p.Status.ContainerStatuses[0]
	st.AllocatedResources[corev1.ResourceCPU] = resource.MustParse("2")
	st.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	// The sidecar runs with its own requests: its status's are the spec's.
	sidecarStatus := st.DeepCopy()
	sidecarStatus.Name = "proxy"
	sidecarStatus.AllocatedResources = sidecar.Resources.Requests.DeepCopy()
	sidecarStatus.Resources = &corev1.ResourceRequirements{Requests: sidecar.Resources.Requests.DeepCopy()}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{*sidecarStatus}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue})
	return p
}

// TestPodKeepsWhatTidalReads checks that a trimmed pod gives every answer
// the untrimmed one gives, and that exactly the documented parts go.
func TestPodKeepsWhatTidalReads(t *testing.T) {
	orig := richPod(t)
	trimmed := orig.DeepCopy()
	trim.Pod(trimmed)

	if !maps.Equal(trimmed.Annotations, readAnnotations) {
		t.Errorf("annotations kept: %v, want %v", trimmed.Annotations, readAnnotations)
	}
	if got, want := simulator.EquivalenceKey(trimmed), simulator.EquivalenceKey(orig); got != want {
		t.Error("equivalence key changed")
	}
	if got, want := podRequests(t, trimmed), podRequests(t, orig); got != want || want < 2000 {
		t.Errorf("scheduler's cpu request %dm, want %dm (the resized container counted)", got, want)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		got, err1 := hpa.Requests([]*corev1.Pod{trimmed}, "", res)
		want, err2 := hpa.Requests([]*corev1.Pod{orig}, "", res)
		if err1 != nil || err2 != nil || !slices.Equal(got, want) {
			t.Errorf("pod loop's %s requests %v (%v), want %v (%v)", res, got, err1, want, err2)
		}
	}
	now := orig.CreationTimestamp.Add(time.Hour)
	if got, want := hpa.GroupPods([]*corev1.Pod{trimmed}, nil, corev1.ResourceCPU, now, hpa.DefaultReadiness()),
		hpa.GroupPods([]*corev1.Pod{orig}, nil, corev1.ResourceCPU, now, hpa.DefaultReadiness()); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("pod loop's readiness groups %+v, want %+v", got, want)
	}
	for _, opts := range []scaledown.RuleOptions{{}, {SkipNodesWithLocalStorage: true, SkipNodesWithSystemPods: true}} {
		got, want := classify(trimmed, opts, now), classify(orig, opts, now)
		if got != want {
			t.Errorf("drain rules %+v: %q, want %q", opts, got, want)
		}
	}
	if core.IsPending(trimmed) != core.IsPending(orig) || core.IsUnschedulable(trimmed) != core.IsUnschedulable(orig) {
		t.Error("pending state changed")
	}

	// Exactly the documented parts go.
	want := orig.DeepCopy()
	want.ManagedFields = nil
	want.Annotations = maps.Clone(readAnnotations)
	for _, ctrs := range [][]corev1.Container{want.Spec.InitContainers, want.Spec.Containers} {
		for i := range ctrs {
			c := &ctrs[i]
			c.Command, c.Args, c.WorkingDir, c.Env, c.EnvFrom = nil, nil, "", nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
		}
	}
	// Only the resized container's status stays, with its resources.
	resizedStatus := want.Status.ContainerStatuses[0]
	want.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: resizedStatus.Name,
		AllocatedResources: resizedStatus.AllocatedResources, Resources: resizedStatus.Resources}}
	want.Status.InitContainerStatuses = nil
	want.Status.PodIP, want.Status.PodIPs, want.Status.HostIP, want.Status.HostIPs = "", nil, "", nil
	renameTokenVolume(want, trim.TokenVolumeName)
	want.Status.Conditions = slices.DeleteFunc(want.Status.Conditions, func(c corev1.PodCondition) bool {
		// The pod is bound: PodScheduled goes too.
		return c.Type != corev1.PodReady && c.Type != corev1.PodResizeInProgress
	})
	for i := range want.Status.Conditions {
		want.Status.Conditions[i].Message = ""
	}
	if !apiequality.Semantic.DeepEqual(trimmed, want) {
		t.Errorf("trimmed pod differs from the pod with only the documented parts dropped:\n%s", diff.Diff(want, trimmed))
	}
}

// podRequests is the pod's cpu request as the scheduler counts it, in
// millicores.
func podRequests(t *testing.T, p *corev1.Pod) int64 {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return pi.CalculateResource().Resource.GetMilliCPU()
}

// classify is the drain rules' verdict on p alone: its kind and blocker.
func classify(p *corev1.Pod, opts scaledown.RuleOptions, now time.Time) string {
	np := scaledown.ClassifyPods([]*corev1.Pod{p}, opts, ownersExist(p), func(*corev1.Pod) bool { return false }, now)
	switch {
	case np.Blocker != nil:
		return "blocked: " + np.Blocker.String()
	case len(np.DaemonSet) > 0:
		return "daemonset"
	case len(np.ToMove) > 0:
		return "moves"
	}
	return "ignored"
}

// TestNodeKeepsWhatTidalReads checks what a trimmed node keeps and loses.
func TestNodeKeepsWhatTidalReads(t *testing.T) {
	c := benchgen.Generate(benchgen.S1())
	if err := c.Store(benchgen.StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	orig := c.Nodes[4] // a tainted node
	orig.Annotations = maps.Clone(readAnnotations)
	maps.Copy(orig.Annotations, unreadAnnotations)
	orig.Status.Images = []corev1.ContainerImage{{Names: []string{benchgen.PauseImage}, SizeBytes: 320000}}
	trimmed := orig.DeepCopy()
	trim.Node(trimmed)

	want := orig.DeepCopy()
	want.ManagedFields, want.Status.Images = nil, nil
	want.Annotations = maps.Clone(readAnnotations)
	if !apiequality.Semantic.DeepEqual(trimmed, want) {
		t.Errorf("trimmed node differs from the node with only the documented parts dropped:\n%s", diff.Diff(want, trimmed))
	}
	if len(trimmed.Spec.Taints) == 0 || trimmed.Annotations[scaledown.ScaleDownDisabledAnnotation] != "true" || !core.IsNodeReady(trimmed) {
		t.Errorf("trimmed node lost what tidal reads: %+v", trimmed)
	}
}

// TestOtherKindsLoseOnlyManagedFields checks that objects tidal may write
// back from its cache (an autoscaler's status) keep their annotations.
func TestOtherKindsLoseOnlyManagedFields(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	meta := func() metav1.ObjectMeta {
		a := maps.Clone(unreadAnnotations)
		a[controller.HistoryAnnotation] = `[{"t":1}]`
		return metav1.ObjectMeta{Name: "web", Annotations: a, ManagedFields: mf}
	}
	for _, obj := range []interface {
		metav1.Object
		runtime.Object
	}{
		&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta()},
		&appsv1.Deployment{ObjectMeta: meta()},
		&corev1.ConfigMap{ObjectMeta: meta(), Data: map[string]string{"priorities": "10: [.*]"}},
	} {
		want := obj.DeepCopyObject()
		out, err := trim.Object(obj)
		if err != nil || out != any(obj) {
			t.Fatalf("Object(%T) = %v, %v", obj, out, err)
		}
		want.(metav1.Object).SetManagedFields(nil)
		if !apiequality.Semantic.DeepEqual(obj, want) {
			t.Errorf("%T: %s", obj, diff.Diff(want, obj))
		}
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "default/web"}
	if out, err := trim.Object(tomb); err != nil || out != any(tomb) {
		t.Errorf("Object(tombstone) = %v, %v; want it unchanged", out, err)
	}
}

// TestObjectIsIdempotent checks that trimming twice is trimming once, as an
// informer's transform must be.
func TestObjectIsIdempotent(t *testing.T) {
	once := richPod(t)
	if _, err := trim.Object(once); err != nil {
		t.Fatal(err)
	}
	twice := once.DeepCopy()
	if _, err := trim.Object(twice); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(once, twice) {
		t.Errorf("second trim changed the pod: %s", diff.Diff(once, twice))
	}
}

// TestPlansAlikeOnTrimmedCluster checks that the scale-up decision and the
// scale-down plan are the same on S1 as the API server stores it, as
// trimmed, and as tidal's informers keep it (trimmed, replicas sharing
// their common parts), with pods that some annotations keep on their node:
// the scheduler's Filter plugins, the drain rules and the equivalence
// groups find on trimmed and shared objects all they read. Planning must
// not change a cached object: shared parts would carry the change to
// other pods.
func TestPlansAlikeOnTrimmedCluster(t *testing.T) {
	transforms := []func(any) (any, error){nil, trim.Object, trim.NewSharer().Transform}
	plans := make([]string, len(transforms))
	for i, transform := range transforms {
		c := benchgen.Generate(benchgen.S1())
		for k, p := range c.RunningPods {
			p.Annotations = maps.Clone(unreadAnnotations)
			if k%7 == 0 {
				p.Annotations[scaledown.SafeToEvictAnnotation] = "false"
			}
		}
		if err := c.Store(benchgen.StoreOptions{Transform: transform}); err != nil {
			t.Fatal(err)
		}
		before := deepCopies(c)
		plans[i] = planOf(t, c)
		if after := deepCopies(c); !apiequality.Semantic.DeepEqual(before, after) {
			t.Errorf("planning changed cached objects: %s", diff.Diff(before, after))
		}
	}
	for i := 1; i < len(plans); i++ {
		if plans[i] != plans[0] {
			t.Errorf("plans differ:\nstored: %s\nwith transform %d: %s", plans[0], i, plans[i])
		}
	}
	if !strings.Contains(plans[0], "NotSafeToEvictAnnotation") {
		t.Errorf("no node kept by the safe-to-evict annotation: %s", plans[0])
	}
}

// deepCopies copies the cluster's nodes and pods.
func deepCopies(c *benchgen.Cluster) []runtime.Object {
	var out []runtime.Object
	for _, n := range c.Nodes {
		out = append(out, n.DeepCopy())
	}
	for _, p := range append(slices.Clone(c.RunningPods), c.PendingPods...) {
		out = append(out, p.DeepCopy())
	}
	return out
}

// planOf is the scale-up decision and the scale-down plan for c, written
// out.
func planOf(t *testing.T, c *benchgen.Cluster) string {
	ctx := context.Background()
	checker := benchload.Checker(t, benchload.Snapshot(t, c, benchload.Rand(1)))
	var groups []scaleup.Group
	for i, tmpl := range benchload.Templates(t, c) {
		g := c.NodeGroups[i]
		groups = append(groups, scaleup.Group{ID: g.ID, Template: tmpl, Max: g.MaxSize, Target: g.TargetSize})
	}
	chain, _ := expander.ParseChain("least-waste")
	up, err := scaleup.Decide(ctx, scaleup.Input{Checker: checker, Pending: simulator.NewEquivalenceKeys().Group(c.PendingPods),
		Groups: groups, Chain: chain, ExpanderContext: &expander.Context{Seed: 1},
		Limits: scaleup.Limits{MaxNodesPerScaleUp: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for _, ni := range checker.Snapshot().Infos() {
		for _, pi := range ni.GetPods() {
			pods = append(pods, pi.GetPod())
		}
	}
	in := scaledown.Input{Checker: checker, Groups: map[string]scaledown.GroupSize{}, Now: time.Now(), Owners: ownersExist(pods...)}
	for _, g := range c.NodeGroups {
		in.Groups[g.ID] = scaledown.GroupSize{Target: g.TargetSize}
	}
	for _, n := range c.Nodes {
		in.Candidates = append(in.Candidates, scaledown.Candidate{Name: n.Name, Group: n.Labels[benchgen.LabelNodeGroup], Threshold: 0.5})
	}
	down, err := scaledown.Decide(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fit %d;", up.FitExisting)
	for _, u := range up.ScaleUps {
		fmt.Fprintf(&b, " %s %d->%d (%d pods);", u.Group, u.From, u.To, len(u.Pods))
	}
	for _, u := range down.Unneeded {
		fmt.Fprintf(&b, " unneeded %s (%d pods);", u.Node, len(u.Pods.ToMove))
	}
	for _, u := range down.Unremovable {
		if u.Reason != scaledown.NotUnderutilized {
			fmt.Fprintf(&b, " %s: %s;", u.Node, u.Reason)
			if u.Blocker != nil {
				fmt.Fprintf(&b, " %s;", u.Blocker.Reason)
			}
		}
	}
	return b.String()
}

// ownersExist says that the controllers of pods, whatever their kind,
// exist.
func ownersExist(pods ...*corev1.Pod) scaledown.Owners {
	owners := scaledown.Owners{Kinds: scaledown.ControllerKinds(), Existing: map[scaledown.OwnerKey]bool{}}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil {
			owners.Kinds[ref.Kind] = true
			owners.Existing[scaledown.OwnerKey{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}] = true
		}
	}
	return owners
}
