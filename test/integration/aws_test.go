package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// awsScaleDownFlags are the tidal flags that make scale-down quick enough
// for a test: nodes go after 2s unneeded, with no cooldown after the
// scale-up.
var awsScaleDownFlags = []string{"--scale-down-unneeded-time=2s", "--scale-down-delay-after-add=0s",
	"--scale-down-delay-after-delete=0s"}

const awsPoolLabel = "awsit.tidal.dev/pool"

// awsEnv is an AWS emulator with an auto-discovered pool of Auto Scaling
// Groups (one, unless addPool adds more) whose instances become Node
// objects in the local cluster when they reach InService, and whose Nodes
// are deleted when the instances are gone, as the kubelet and the cloud
// node controller would do.
type awsEnv struct {
	client    kubernetes.Interface // of the test's cluster
	srv       *awstest.Server
	asg       string
	cluster   string
	discovery string
	template  *corev1.Node
	lt        string
	// imageParam is the SSM parameter of the launch template's image id.
	imageParam string
	mu         sync.Mutex
	pools      map[string]bool
	hookErrors []error
	// nodeLabels are labels the "kubelet" adds to every Node it registers,
	// as a bootstrap script would, beyond the template's.
	nodeLabels map[string]string
}

// startAWSEnv starts the emulator with an ASG of m5.xlarge instances
// (min..max, desired min) tagged for auto-discovery and with node-template
// tags, and makes the hooks that create and delete Nodes. opts are added to
// the emulator's. tidal reaches it through startTidal's options, or through
// the process's environment after useEnvironment.
func startAWSEnv(t *testing.T, min, max int, opts ...awstest.Option) *awsEnv {
	t.Helper()
	suffix := rand.String(5)
	e := &awsEnv{client: cluster(t).Client, asg: "awsit-" + suffix, cluster: "awsit-cluster-" + suffix}
	e.pools = map[string]bool{e.asg: true}
	e.discovery = "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/" + e.cluster
	t.Cleanup(func() { deleteAWSNodes(t, e.asg) })

	e.srv = awstest.New(append([]awstest.Option{awstest.WithLaunchDelay(700 * time.Millisecond), awstest.WithTerminateDelay(300 * time.Millisecond),
		awstest.WithPageSize(1)}, opts...)...)
	t.Cleanup(e.srv.Close)
	// The image id is an SSM parameter, resolved by EC2 at each launch,
	// as the EKS-optimized AMIs' public parameters are used.
	e.imageParam = "/tidal-it/" + e.asg + "/image_id"
	e.srv.SetParameter(e.imageParam, "ami-0123456789abcdef0")
	lt := e.srv.AddLaunchTemplate(awstest.LaunchTemplate{Name: e.asg, Versions: []awstest.LaunchTemplateData{
		{InstanceType: "m5.xlarge", ImageID: "resolve:ssm:" + e.imageParam, RootVolumeGiB: 80},
	}})
	e.lt = lt
	// Besides the pool: a group of this cluster the pods do not fit (no
	// pool label), so that discovery returns two groups in two pages of
	// one, and a group of another cluster that discovery must filter out.
	for _, g := range []awstest.GroupSpec{
		{Name: e.asg + "-spare", MaxSize: 3, AvailabilityZones: []string{"us-east-1a"},
			LaunchTemplate: &awstest.LaunchTemplateRef{ID: lt, Version: "$Latest"},
			Tags:           map[string]string{"k8s.io/cluster-autoscaler/enabled": "true", "k8s.io/cluster-autoscaler/" + e.cluster: "owned"}},
		e.poolGroup(e.asg, min, max),
		{Name: e.asg + "-other", MaxSize: 3, AvailabilityZones: []string{"us-east-1a"},
			LaunchTemplate: &awstest.LaunchTemplateRef{ID: lt, Version: "$Latest"},
			Tags:           map[string]string{"k8s.io/cluster-autoscaler/enabled": "true", "k8s.io/cluster-autoscaler/elsewhere": "owned"}},
	} {
		if err := e.srv.AddGroup(g); err != nil {
			t.Fatal(err)
		}
	}

	// The template the provider builds is what the "kubelet" registers.
	p := e.provider(t, aws.Config{AutoDiscovery: e.discoverySpecs(t)})
	var g cloudprovider.NodeGroup
	for _, ng := range p.NodeGroups() {
		if ng.Id() == e.asg {
			g = ng
		}
	}
	if g == nil {
		t.Fatalf("the provider did not discover %s", e.asg)
	}
	tmpl, err := g.TemplateNodeInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.template = tmpl.Node
	e.srv.SetHooks(e.createNode, e.deleteNode)
	return e
}

// poolGroup is an ASG of the pool: the launch template, the discovery
// tags, and the node-template tags the pods select and tolerate.
func (e *awsEnv) poolGroup(name string, min, max int) awstest.GroupSpec {
	return awstest.GroupSpec{Name: name, MinSize: min, MaxSize: max, DesiredCapacity: min, AvailabilityZones: []string{"us-east-1a", "us-east-1b"},
		Subnets: []string{"subnet-0a", "subnet-0b"}, LaunchTemplate: &awstest.LaunchTemplateRef{ID: e.lt, Version: "$Latest"},
		Tags: map[string]string{
			"k8s.io/cluster-autoscaler/enabled":         "true",
			"k8s.io/cluster-autoscaler/" + e.cluster:    "owned",
			aws.LabelTagPrefix + awsPoolLabel:           e.asg,
			aws.TaintTagPrefix + "awsit.tidal.dev/only": "web:NoSchedule",
		}}
}

// addPool adds an empty ASG to the pool, which the pods fit as well as
// the first.
func (e *awsEnv) addPool(t *testing.T, name string, max int) {
	t.Helper()
	if err := e.srv.AddGroup(e.poolGroup(name, 0, max)); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pools[name] = true
}

func (e *awsEnv) inPool(group string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pools[group]
}

func (e *awsEnv) discoverySpecs(t *testing.T) []aws.AutoDiscoverySpec {
	spec, err := config.ParseASGAutoDiscoverySpec(e.discovery)
	if err != nil {
		t.Fatal(err)
	}
	out := aws.AutoDiscoverySpec{}
	for _, tag := range spec.Tags {
		out.Tags = append(out.Tags, aws.TagFilter(tag))
	}
	return []aws.AutoDiscoverySpec{out}
}

// provider makes an AWS provider against the emulator, outside tidal.
func (e *awsEnv) provider(t *testing.T, cfg aws.Config) *aws.Cloud {
	t.Helper()
	akid, secret := e.srv.Credentials()
	ctx := testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity)
	clients, err := aws.NewClients(ctx, aws.ClientOptions{Region: e.srv.Region(), Endpoint: e.srv.URL(),
		MaxBackoff: 50 * time.Millisecond, LoadOptions: []func(*awsconfig.LoadOptions) error{
			awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(akid, secret, "")),
		}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := aws.New(ctx, cfg, clients)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// useEnvironment points the process's AWS environment at the emulator
// (credentials and AWS_ENDPOINT_URL, as a user could), for a tidal started
// without startTidal's options. It is the process's: the test cannot run in
// parallel (t.Setenv).
func (e *awsEnv) useEnvironment(t *testing.T) {
	akid, secret := e.srv.Credentials()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ENDPOINT_URL": e.srv.URL(),
		"AWS_CONFIG_FILE": dir + "/config", "AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// startTidal starts tidal on the test's cluster with its AWS SDK pointed at
// the emulator by options, not by the process's environment, so that tests
// against emulators of their own run side by side. Shared config files
// that do not exist keep the machine's (~/.aws) out.
func (e *awsEnv) startTidal(t *testing.T, args ...string) *tidal {
	t.Helper()
	return e.startTidalWith(t, nil, args...)
}

// startTidalWith is startTidal with more options for Run.
func (e *awsEnv) startTidalWith(t *testing.T, options []app.Option, args ...string) *tidal {
	t.Helper()
	akid, secret := e.srv.Credentials()
	dir := t.TempDir()
	sdk := app.WithAWSClientOptions(func(o *aws.ClientOptions) {
		o.Endpoint = e.srv.URL()
		o.LoadOptions = append(o.LoadOptions,
			awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(akid, secret, "")),
			awsconfig.WithSharedConfigFiles([]string{dir + "/config"}),
			awsconfig.WithSharedCredentialsFiles([]string{dir + "/credentials"}),
			awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	})
	return testenv.StartTidalWith(context.Background(), t, cluster(t).KubeconfigPath, append([]app.Option{sdk}, options...), args...)
}

// awsFlags make tidal use the emulator's region and discover the pool.
func (e *awsEnv) awsFlags() []string {
	return []string{"--cloud-provider=aws", "--aws-region=" + e.srv.Region(), "--node-group-auto-discovery=" + e.discovery,
		"--aws-refresh-interval=5s"}
}

func (e *awsEnv) tidalFlags(extra ...string) []string {
	return append(append(e.awsFlags(), "--scan-interval=1s", "--leader-elect=false"), extra...)
}

// createNode registers the Node of an instance that reached InService, as
// its kubelet would: the template's labels, taints and resources, the
// instance's name, zone and providerID.
func (e *awsEnv) createNode(in awstest.Instance) {
	if !e.inPool(in.Group) {
		return
	}
	n := e.template.DeepCopy()
	n.Name = in.PrivateDNSName
	n.Labels[corev1.LabelHostname] = in.PrivateDNSName
	n.Labels[corev1.LabelTopologyZone] = in.Zone
	n.Labels[aws.LabelEBSCSIZone] = in.Zone
	n.Spec.ProviderID = in.ProviderID()
	n.Status.Conditions = nil
	e.mu.Lock()
	for k, v := range e.nodeLabels {
		n.Labels[k] = v
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.hookError(fmt.Errorf("create node for %s: %w", in.ID, err))
	}
}

// deleteNode removes the Node of a terminated instance, as the cloud node
// controller would.
func (e *awsEnv) deleteNode(in awstest.Instance) {
	if !e.inPool(in.Group) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.client.CoreV1().Nodes().Delete(ctx, in.PrivateDNSName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.hookError(fmt.Errorf("delete node for %s: %w", in.ID, err))
	}
}

func (e *awsEnv) hookError(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hookErrors = append(e.hookErrors, err)
}

func (e *awsEnv) checkHooks(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, err := range e.hookErrors {
		t.Error(err)
	}
}

// nodes lists the pool's Node objects.
func (e *awsEnv) nodes(ctx context.Context) ([]corev1.Node, error) {
	list, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: awsPoolLabel + "=" + e.asg})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (e *awsEnv) group(t *testing.T) awstest.Group {
	t.Helper()
	g, ok := e.srv.Group(e.asg)
	if !ok {
		t.Fatalf("no group %s in the emulator", e.asg)
	}
	return g
}

func deleteAWSNodes(t *testing.T, asg string) {
	ctx := context.Background()
	err := cluster(t).Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: awsPoolLabel + "=" + asg})
	if err != nil {
		t.Errorf("delete nodes of %s: %v", asg, err)
	}
}

// webPods makes a Deployment whose pods only fit the pool's nodes: they
// select its template label and tolerate its template taint.
func (e *awsEnv) webPods(t *testing.T, ns string, replicas int32, cpu, mem string) {
	t.Helper()
	createDeployment(t, e.webDeployment(ns, replicas, cpu, mem))
}

func (e *awsEnv) webDeployment(ns string, replicas int32, cpu, mem string) *appsv1.Deployment {
	d := deployment(ns, "web", replicas, cpu, mem)
	spec := &d.Spec.Template.Spec
	spec.NodeSelector = map[string]string{awsPoolLabel: e.asg}
	spec.Tolerations = []corev1.Toleration{{Key: "awsit.tidal.dev/only", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	return d
}

func awsRunningPods(t testing.TB, ctx context.Context, ns string) (int, error) {
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n, nil
}

// TestAWSAutoDiscoveredASGEndToEnd runs tidal with --cloud-provider=aws
// against the emulator: pending pods that only fit the auto-discovered ASG
// (empty, so from its template) make tidal raise its desired capacity; the
// ASG launches instances, they register as Nodes and the pods run.
func TestAWSAutoDiscoveredASGEndToEnd(t *testing.T) {
	// Serial: tidal finds the emulator through the process's environment,
	// as a user's would through theirs (useEnvironment).
	ctx := context.Background()
	e := startAWSEnv(t, 0, 6)
	e.useEnvironment(t)
	ns := newNamespace(t)
	startTidal(t, e.tidalFlags(awsScaleDownFlags...)...)

	// m5.xlarge: 4 vCPUs, 3920m allocatable with the EKS reservation, so
	// 2 pods of 1.5 CPU per node and 3 nodes for 6 pods.
	e.webPods(t, ns, 6, "1500m", "1Gi")
	poll(t, 90*time.Second, "all 6 pods Running on the ASG's nodes", func(ctx context.Context) (bool, error) {
		n, err := awsRunningPods(t, ctx, ns)
		return n == 6, err
	})
	nodes, err := e.nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := e.group(t)
	if len(nodes) != 3 || g.DesiredCapacity != 3 {
		t.Fatalf("%d nodes, desired capacity %d; want 3 for 6 pods of 1.5 CPU on m5.xlarge", len(nodes), g.DesiredCapacity)
	}
	inService := map[string]bool{}
	for _, in := range g.Instances {
		if in.LifecycleState == awstest.StateInService {
			inService[in.ProviderID()] = true
		}
	}
	for _, n := range nodes {
		if !inService[n.Spec.ProviderID] {
			t.Fatalf("node %s has providerID %q, not one of the ASG's InService instances %v", n.Name, n.Spec.ProviderID, inService)
		}
	}
	sets := e.srv.RequestsOf("SetDesiredCapacity")
	if len(sets) == 0 {
		t.Fatal("tidal never called SetDesiredCapacity")
	}
	for _, r := range sets {
		if r.Params.Get("AutoScalingGroupName") != e.asg || r.Params.Get("HonorCooldown") != "false" || !r.Signed {
			t.Fatalf("SetDesiredCapacity request %+v", r)
		}
	}
	for _, name := range []string{e.asg + "-spare", e.asg + "-other"} {
		if other, _ := e.srv.Group(name); other.DesiredCapacity != 0 {
			t.Fatalf("ASG %s, which the pods do not fit or which belongs to another cluster, was scaled to %d", name, other.DesiredCapacity)
		}
	}
	pages := 0
	for _, r := range e.srv.RequestsOf("DescribeAutoScalingGroups") {
		if r.Params.Get("NextToken") != "" {
			pages++
		}
	}
	if pages == 0 {
		t.Fatal("discovery never asked for a second page")
	}
	events, err := cluster(t).Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", "TriggeredScaleUp").String(),
	})
	if err != nil || len(events.Items) == 0 || !strings.Contains(events.Items[0].Message, e.asg) {
		t.Fatalf("no TriggeredScaleUp event naming %s on the pods (err %v, events %d)", e.asg, err, len(events.Items))
	}
	e.checkHooks(t)

	t.Run("scale-down", func(t *testing.T) { awsScaleDownStep(t, e, ns) })
}

// awsScaleDownStep removes the workload and waits for tidal to terminate
// the ASG's instances (TerminateInstanceInAutoScalingGroup with
// ShouldDecrementDesiredCapacity) and for their Nodes to go.
func awsScaleDownStep(t *testing.T, e *awsEnv, ns string) {
	ctx := context.Background()
	if err := cluster(t).Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete deployment: %v", err)
	}
	poll(t, 3*time.Minute, "the ASG to shrink to its minimum and its Nodes to go", func(ctx context.Context) (bool, error) {
		nodes, err := e.nodes(ctx)
		g, _ := e.srv.Group(e.asg)
		return err == nil && len(nodes) == 0 && g.DesiredCapacity == 0 && len(g.Instances) == 0, err
	})
	terms := e.srv.RequestsOf("TerminateInstanceInAutoScalingGroup")
	if len(terms) == 0 {
		t.Fatal("tidal never called TerminateInstanceInAutoScalingGroup")
	}
	for _, r := range terms {
		if r.Params.Get("ShouldDecrementDesiredCapacity") != "true" {
			t.Fatalf("terminate without decrementing the desired capacity: %+v", r)
		}
	}
	e.checkHooks(t)
}

// TestAWSProviderDeletesNodesAndReportsCapacityErrors drives the provider
// directly against the emulator and the local cluster: DeleteNodes
// terminates instances and their Nodes go; a stock-out shows up on the
// placeholders of the requested instances as an OutOfResources error, and
// cancelling them works.
func TestAWSProviderDeletesNodesAndReportsCapacityErrors(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startAWSEnv(t, 1, 5)
	p := e.provider(t, aws.Config{AutoDiscovery: e.discoverySpecs(t), RefreshInterval: 5 * time.Second,
		ConvergingRefreshInterval: 200 * time.Millisecond})
	var g cloudprovider.NodeGroup
	for _, ng := range p.NodeGroups() {
		if ng.Id() == e.asg {
			g = ng
		}
	}
	if g == nil || g.MinSize() != 1 || g.MaxSize() != 5 {
		t.Fatalf("group %v", g)
	}
	if err := g.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "3 Ready Nodes with the instances' providerIDs", func(ctx context.Context) (bool, error) {
		nodes, err := e.nodes(ctx)
		ready := 0
		for i := range nodes {
			if isReady(&nodes[i]) {
				ready++
			}
		}
		return ready == 3, err
	})
	poll(t, 10*time.Second, "the provider to see 3 running instances", func(context.Context) (bool, error) {
		if err := p.Refresh(context.Background()); err != nil {
			return false, err
		}
		instances, err := g.Nodes()
		running := 0
		for _, in := range instances {
			if in.Status.State == cloudprovider.InstanceRunning {
				running++
			}
		}
		return running == 3, err
	})
	nodes, err := e.nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		ng, err := p.NodeGroupForNode(&nodes[i])
		if err != nil || ng == nil || ng.Id() != e.asg {
			t.Fatalf("NodeGroupForNode(%s) = %v, %v", nodes[i].Name, ng, err)
		}
	}

	// Remove one node: its instance is terminated without replacement and
	// its Node goes.
	victim := nodes[0]
	if err := g.DeleteNodes(context.Background(), []*corev1.Node{&victim}); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	poll(t, 20*time.Second, "the deleted node's Node to go", func(ctx context.Context) (bool, error) {
		_, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, victim.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if d := e.group(t).DesiredCapacity; d != 2 {
		t.Fatalf("desired capacity %d after deleting one of 3, want 2", d)
	}
	terms := e.srv.RequestsOf("TerminateInstanceInAutoScalingGroup")
	if len(terms) != 1 || terms[0].Params.Get("ShouldDecrementDesiredCapacity") != "true" || !strings.HasSuffix(victim.Spec.ProviderID, "/"+terms[0].Params.Get("InstanceId")) {
		t.Fatalf("terminate requests %+v for node %s (%s)", terms, victim.Name, victim.Spec.ProviderID)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	rest := []*corev1.Node{&nodes[1], &nodes[2]}
	if err := g.DeleteNodes(context.Background(), rest); err == nil || !strings.Contains(err.Error(), "below min size 1") {
		t.Fatalf("deleting every node of a min-1 group: %v", err)
	}

	// A stock-out: the requested instance never launches; the placeholder
	// says why, and the node loop can cancel it.
	if err := e.srv.SetLaunchFailure(e.asg, awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	if err := g.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, "the placeholder to carry an OutOfResources error", func(context.Context) (bool, error) {
		if err := p.Refresh(context.Background()); err != nil {
			return false, err
		}
		instances, err := g.Nodes()
		for _, in := range instances {
			if info := in.Status.ErrorInfo; info != nil {
				return info.ErrorClass == cloudprovider.OutOfResourcesErrorClass && info.ErrorCode == "InsufficientInstanceCapacity", nil
			}
		}
		return false, err
	})
	if err := g.DecreaseTargetSize(context.Background(), -1); err != nil {
		t.Fatalf("cancel the failed request: %v", err)
	}
	if d := e.group(t).DesiredCapacity; d != 2 {
		t.Fatalf("desired capacity %d after cancelling, want 2", d)
	}
	if err := g.DecreaseTargetSize(context.Background(), -1); err == nil {
		t.Fatal("DecreaseTargetSize removed a running instance")
	}
	if nodes, _ := e.nodes(ctx); len(nodes) != 2 {
		t.Fatalf("%d nodes left, want 2", len(nodes))
	}
	e.checkHooks(t)
}

// TestAWSStockOutFailsOverWithoutAScan: the ASG the priority expander
// prefers is out of capacity (InsufficientInstanceCapacity in its scaling
// activities, a few seconds after each launch is tried, as EC2 takes a while
// to give up). tidal, with an hour between scans, grows it for 4 pending
// pods; the provider watches the launches in flight, reads the failure and
// tells the node loop, which backs the ASG off, cancels its request, tells
// the pods, and grows the next ASG of the pool. Nothing else wakes the
// loop once its start-up iterations are over: no node comes, and the pods'
// unschedulable reports while nodes are coming wake nothing.
func TestAWSStockOutFailsOverWithoutAScan(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startAWSEnv(t, 0, 4, awstest.WithFailureDelay(3*time.Second))
	next := e.asg + "-b"
	e.addPool(t, next, 4)
	if err := e.srv.SetLaunchFailure(e.asg, awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	setPriorities(t, "tidal-priority-expander", fmt.Sprintf("100:\n  - ^%s$\n1:\n  - ^%s$\n", e.asg, next))
	ns := newNamespace(t)
	e.webPods(t, ns, 4, "1500m", "1Gi")
	waitUnschedulable(t, ns, "web", 4)
	tl := e.startTidal(t, append(e.awsFlags(), append(wakeOnlyFlags, "--expander=priority")...)...)

	poll(t, 90*time.Second, "the 4 pods Running on nodes of "+next, func(ctx context.Context) (bool, error) {
		n, err := awsRunningPods(t, ctx, ns)
		return n == 4, err
	})
	// 2 pods of 1.5 CPU per m5.xlarge: 2 nodes, both of the next ASG.
	nodes, err := e.nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A group missing from the emulator fails the checks below.
	grown, _ := e.srv.Group(next)
	instances := map[string]bool{}
	for _, in := range grown.Instances {
		instances[in.ProviderID()] = in.LifecycleState == awstest.StateInService
	}
	if len(nodes) != 2 {
		t.Fatalf("%d nodes in the pool, want 2 of %s", len(nodes), next)
	}
	for _, n := range nodes {
		if !instances[n.Spec.ProviderID] {
			t.Fatalf("node %s (%s) is not an InService instance of %s: %v", n.Name, n.Spec.ProviderID, next, instances)
		}
	}
	failed := e.group(t)
	var sets []string
	for _, r := range e.srv.RequestsOf("SetDesiredCapacity") {
		if r.Params.Get("AutoScalingGroupName") == e.asg {
			sets = append(sets, r.Params.Get("DesiredCapacity"))
		}
	}
	if failed.DesiredCapacity != 0 || len(failed.Instances) != 0 || strings.Join(sets, ",") != "2,0" {
		t.Fatalf("%s: desired %d, %d instances, desired capacities set %v; want 2 asked for, then cancelled",
			e.asg, failed.DesiredCapacity, len(failed.Instances), sets)
	}
	if v, err := metricValue(tl.Address, fmt.Sprintf(`tidal_node_group_backoff_status{node_group=%q}`, e.asg)); err != nil || v != 1 {
		t.Fatalf("%s backoff metric %v (err %v), want 1", e.asg, v, err)
	}
	want := "pod triggered a scale-up of " + e.asg + " that failed: out of resources InsufficientInstanceCapacity: Auto Scaling Group " +
		e.asg + " could not launch an instance: Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient m5.xlarge capacity"
	poll(t, 30*time.Second, "the 4 pods told "+e.asg+" failed", func(ctx context.Context) (bool, error) {
		told, err := podsWithEvent(t, ctx, ns, "FailedScaleUp")
		for name, msg := range told {
			if !strings.HasPrefix(msg, want) {
				t.Fatalf("pod %s: FailedScaleUp %q, want it to start with %q", name, msg, want)
			}
		}
		return len(told) == 4, err
	})
	poll(t, 30*time.Second, "the 4 pods told "+next+" is grown instead", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, ns, "TriggeredScaleUp")
		told := map[string]bool{}
		for _, ev := range events {
			if strings.Contains(ev.Message, "{"+next+" ") {
				told[ev.InvolvedObject.Name] = true
			}
		}
		return len(told) == 4, err
	})
	e.checkHooks(t)
}

// awsBootstrapLabel stands for a label the kubelet or a bootstrap script
// puts on a node, which no node-template tag gives.
const awsBootstrapLabel = "awsit.tidal.dev/bootstrapped"

// TestAWSTemplateFromLiveNode: the pool's nodes carry a label their
// bootstrap sets. Pods that select it fit a node like the first ASG's live
// one and no template built from tags. tidal makes a group's template from
// one of its nodes once that has been Ready for a minute, so it grows the
// first ASG for the pod its node has no room for, and leaves the empty ASG
// of the same tags alone.
func TestAWSTemplateFromLiveNode(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startAWSEnv(t, 0, 4)
	e.mu.Lock()
	e.nodeLabels = map[string]string{awsBootstrapLabel: "true"}
	e.mu.Unlock()
	empty := e.asg + "-b"
	e.addPool(t, empty, 4)
	if err := e.srv.SetDesiredCapacity(e.asg, 1); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the first ASG's node Ready", func(ctx context.Context) (bool, error) {
		nodes, err := e.nodes(ctx)
		return len(nodes) == 1 && isReady(&nodes[0]), err
	})
	ns := newNamespace(t)
	// 2 pods of 1.5 CPU fit an m5.xlarge: the node takes 2, the third
	// needs a node more.
	d := e.webDeployment(ns, 3, "1500m", "1Gi")
	d.Spec.Template.Spec.NodeSelector[awsBootstrapLabel] = "true"
	createDeployment(t, d)
	e.startTidal(t, e.tidalFlags()...)

	poll(t, 3*time.Minute, "the 3 pods Running", func(ctx context.Context) (bool, error) {
		n, err := awsRunningPods(t, ctx, ns)
		return n == 3, err
	})
	grown := e.group(t)
	inService := map[string]bool{}
	for _, in := range grown.Instances {
		inService[in.ProviderID()] = in.LifecycleState == awstest.StateInService
	}
	nodes, err := e.nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || grown.DesiredCapacity != 2 {
		t.Fatalf("%d nodes, %s desired %d: want 2, the live node and one more", len(nodes), e.asg, grown.DesiredCapacity)
	}
	for _, n := range nodes {
		if !inService[n.Spec.ProviderID] {
			t.Fatalf("node %s (%s) is not an InService instance of %s: %v", n.Name, n.Spec.ProviderID, e.asg, inService)
		}
	}
	for _, r := range e.srv.RequestsOf("SetDesiredCapacity") {
		if r.Params.Get("AutoScalingGroupName") != e.asg {
			t.Fatalf("tidal set the desired capacity of %s, whose template from tags lacks %s: %+v",
				r.Params.Get("AutoScalingGroupName"), awsBootstrapLabel, r.Params)
		}
	}
	if g, _ := e.srv.Group(empty); g.DesiredCapacity != 0 {
		t.Fatalf("the empty ASG %s was grown to %d", empty, g.DesiredCapacity)
	}
	e.checkHooks(t)
}
