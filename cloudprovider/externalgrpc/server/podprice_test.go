package server_test

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/server"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
)

var (
	hourStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	hourEnd   = hourStart.Add(time.Hour)
)

// pendingPod is a pod as the API server stores a Deployment's pending
// replica: defaulted, with the default tolerations, not bound.
func pendingPod(name, cpu, mem string) *corev1.Pod {
	sec := int64(300)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("0b5e-" + name),
			Labels: map[string]string{"app": "web", "pod-template-hash": "5d8f"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "web:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
			RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &sec},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &sec},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
}

func podPrice(t *testing.T, s *server.Server, pod *corev1.Pod) (float64, error) {
	t.Helper()
	b, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.PricingPodPrice(context.Background(), &protos.PricingPodPriceRequest{
		PodBytes: b, StartTimestamp: timestamppb.New(hourStart), EndTimestamp: timestamppb.New(hourEnd)})
	return resp.GetPrice(), err
}

func templateNodePrice(t *testing.T, s *server.Server, group string) float64 {
	t.Helper()
	ctx := context.Background()
	tmpl, err := s.NodeGroupTemplateNodeInfo(ctx, &protos.NodeGroupTemplateNodeInfoRequest{Id: group})
	if err != nil {
		t.Fatalf("template of %s: %v", group, err)
	}
	node := &corev1.Node{}
	if err := node.Unmarshal(tmpl.GetNodeBytes()); err != nil {
		t.Fatal(err)
	}
	resp, err := s.PricingNodePrice(ctx, &protos.PricingNodePriceRequest{Node: externalgrpc.NodeToProto(node),
		StartTimestamp: timestamppb.New(hourStart), EndTimestamp: timestamppb.New(hourEnd)})
	if err != nil {
		t.Fatalf("price of %s's template: %v", group, err)
	}
	return resp.GetPrice()
}

// caOption is an option as Cluster Autoscaler's price expander sees it:
// a group, how many nodes, the pods they take.
type caOption struct {
	group string
	nodes int
	pods  []*corev1.Pod
}

// caPriceChoice follows Cluster Autoscaler's price expander: the
// stabilisation price is the price of a 500m / 500Mi pod; an option whose
// pod price fails is skipped; an option scores (nodes' price + stab) /
// (pods' price + stab), and the lowest score wins. (Its node-unfitness
// factor does not involve the provider's prices and is left out.) It
// returns the chosen group and each option's score.
func caPriceChoice(t *testing.T, s *server.Server, options []caOption) (string, map[string]float64) {
	t.Helper()
	stab, err := podPrice(t, s, pendingPod("stabilize", "500m", "500Mi"))
	if err != nil {
		t.Errorf("the stabilisation pod's price: %v (CA would go on without stabilisation)", err)
	}
	best, bestScore, scores := "", math.Inf(1), map[string]float64{}
next:
	for _, o := range options {
		nodes := templateNodePrice(t, s, o.group) * float64(o.nodes)
		pods := 0.0
		for _, p := range o.pods {
			price, err := podPrice(t, s, p)
			if err != nil {
				t.Logf("option %s skipped, as CA skips it: pod price of %s: %v", o.group, p.Name, err)
				continue next
			}
			pods += price
		}
		scores[o.group] = (nodes + stab) / (pods + stab)
		if scores[o.group] < bestScore {
			best, bestScore = o.group, scores[o.group]
		}
	}
	return best, scores
}

func pods(n int, cpu, mem string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, pendingPod("web-"+strconv.Itoa(i), cpu, mem))
	}
	return out
}

// The local cloud's default groups: general-a (4 CPU, 16Gi, 0.19/h) and
// highmem-a (8 CPU, 64Gi, 0.50/h), served as Cluster Autoscaler sees them.
func TestPodPriceLetsCAsPriceExpanderChoose(t *testing.T) {
	cloud, err := local.New(fake.NewClientset(), local.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(cloud)
	for _, tc := range []struct {
		name    string
		options []caOption
		want    string
	}{
		// Three 1-CPU pods fit one node of either group: the cheaper node.
		{"cpu pods", []caOption{{"general-a", 1, pods(3, "1", "2Gi")}, {"highmem-a", 1, pods(3, "1", "2Gi")}}, "general-a"},
		// Three 10Gi pods take three general nodes or one highmem node.
		{"memory pods", []caOption{{"general-a", 3, pods(3, "500m", "10Gi")}, {"highmem-a", 1, pods(3, "500m", "10Gi")}}, "highmem-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, scores := caPriceChoice(t, s, tc.options)
			if got != tc.want {
				t.Errorf("CA's price expander would choose %q, want %q (scores %v)", got, tc.want, scores)
			}
			if len(scores) != len(tc.options) {
				t.Errorf("scored %d options of %d: a pod price failed (scores %v)", len(scores), len(tc.options), scores)
			}
		})
	}

	// An unbound pod costs its share of the cheapest template per unit,
	// whatever option it is scored in: 1 CPU of 4 and 2Gi of 16Gi of a
	// 0.19/h node, (1/4 + 2/16) / 2 * 0.19.
	got, err := podPrice(t, s, pendingPod("web-0", "1", "2Gi"))
	if want := (0.25 + 0.125) / 2 * 0.19; err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("pending 1 CPU / 2Gi pod: %v, %v; want %v", got, err, want)
	}
	// A pod that requests nothing costs nothing (CA's stabilisation
	// keeps the score finite).
	if got, err := podPrice(t, s, pendingPod("idle", "0", "0")); err != nil || got != 0 {
		t.Errorf("pod without requests: %v, %v; want 0", got, err)
	}
}

// A pod bound to a node is priced by that node; a lookup that fails is an
// error, never a price of zero.
func TestPodPriceOfABoundPodIsItsNodesShare(t *testing.T) {
	cloud, err := local.New(fake.NewClientset(), local.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := cloud.NodeGroups()[2].TemplateNodeInfo(context.Background()) // highmem-a
	if err != nil {
		t.Fatal(err)
	}
	node := tmpl.Node.DeepCopy()
	node.Name = "highmem-a-00001"
	lookupErr := errors.New("etcdserver: request timed out")
	s := server.New(cloud, server.WithNodeLookup(func(_ context.Context, name string) (*corev1.Node, error) {
		if name == node.Name {
			return node, nil
		}
		return nil, lookupErr
	}))
	pod := pendingPod("web-0", "2", "16Gi")
	pod.Spec.NodeName = node.Name
	got, err := podPrice(t, s, pod)
	if want := (2.0/8 + 16.0/64) / 2 * 0.50; err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("pod bound to %s: %v, %v; want %v", node.Name, got, err, want)
	}
	pod.Spec.NodeName = "gone"
	if _, err := podPrice(t, s, pod); status.Code(err) != codes.Unavailable {
		t.Errorf("pod bound to a node that cannot be read: %v, want Unavailable", err)
	}
}

// Without a priced template the price is an error, so that CA skips the
// option rather than score it on a made-up price.
func TestPodPriceWithoutAPricedTemplateFails(t *testing.T) {
	if _, err := podPrice(t, server.New(oneGroup{}), pendingPod("web-0", "1", "1Gi")); status.Code(err) != codes.Unknown {
		t.Errorf("no template: %v, want Unknown naming the groups", err)
	}
	if _, err := podPrice(t, server.New(oneGroup{err: errors.New("pricing API down")}), pendingPod("web-0", "1", "1Gi")); status.Code(err) != codes.Unknown {
		t.Errorf("no pricing: %v, want Unknown", err)
	}
	s := server.New(oneGroup{})
	if _, err := s.PricingPodPrice(context.Background(), &protos.PricingPodPriceRequest{PodBytes: []byte{0xff, 0x01}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("undecodable pod: %v, want InvalidArgument", err)
	}
}

// StartLoopbackWith listens on the port asked for, and answers
// PricingPodPrice over mutual TLS.
func TestLoopbackOnAPinnedPort(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	cloud, err := local.New(fake.NewClientset(), local.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lb, err := server.StartLoopbackWith(ctx, cloud, t.TempDir(), 5*time.Second, server.LoopbackConfig{Port: port})
	if err != nil {
		cancel()
		t.Fatalf("start on port %d: %v", port, err)
	}
	defer func() { cancel(); _ = lb.Wait() }()
	if want := "127.0.0.1:" + strconv.Itoa(port); lb.Address != want {
		t.Errorf("address %s, want %s", lb.Address, want)
	}
	cfg, err := externalgrpc.LoadConfig(lb.CloudConfig)
	if err != nil {
		t.Fatal(err)
	}
	dial, err := cfg.DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(cfg.Address, dial...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b, _ := pendingPod("web-0", "1", "2Gi").Marshal()
	resp, err := protos.NewCloudProviderClient(conn).PricingPodPrice(ctx, &protos.PricingPodPriceRequest{
		PodBytes: b, StartTimestamp: timestamppb.New(hourStart), EndTimestamp: timestamppb.New(hourEnd)})
	if err != nil || resp.GetPrice() <= 0 {
		t.Errorf("PricingPodPrice over TLS: %v, %v", resp.GetPrice(), err)
	}
}
