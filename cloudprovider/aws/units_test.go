package aws

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

func TestParseProviderID(t *testing.T) {
	zone, id, err := ParseProviderID("aws:///us-east-1a/i-0123456789abcdef0")
	if err != nil || zone != "us-east-1a" || id != "i-0123456789abcdef0" {
		t.Fatalf("got %q %q %v", zone, id, err)
	}
	if _, id, err := ParseProviderID("aws:///eu-west-1b/i-1234abcd"); err != nil || id != "i-1234abcd" {
		t.Fatalf("8-digit id: %q %v", id, err)
	}
	if got := ProviderID("us-west-2c", "i-0123456789abcdef0"); got != "aws:///us-west-2c/i-0123456789abcdef0" {
		t.Fatalf("ProviderID = %q", got)
	}
	p := ProviderID("us-east-1a", placeholderID("my-asg-1", 4))
	if _, id, err := ParseProviderID(p); err != nil {
		t.Fatalf("placeholder %q: %v", p, err)
	} else if asg, n, ok := parsePlaceholder(id); !ok || asg != "my-asg-1" || n != 4 {
		t.Fatalf("parsePlaceholder(%q) = %q %d %v", id, asg, n, ok)
	}
	for bad, want := range map[string]string{
		"":                                         "is not an EC2 instance",
		"local:///general-a/general-a-00001":       "is not an EC2 instance",
		"aws://us-east-1a/i-0123456789abcdef0":     "is not an EC2 instance",
		"aws:///i-0123456789abcdef0":               "got 1 path segment",
		"aws:///us-east-1a/":                       "is not an EC2 instance id",
		"aws:////i-0123456789abcdef0":              "availability zone \"\" is empty",
		"aws:///us-east-1a/i-0123456789abcdef0/x":  "got 3 path segment",
		"aws:///us-east-1a/i-0123456789ABCDEF0":    "is not an EC2 instance id",
		"aws:///us-east-1a/i-123":                  "is not an EC2 instance id",
		"aws:///us-east-1a/fargate-ip-10-0-0-1":    "is not an EC2 instance id",
		"aws:///us east/i-0123456789abcdef0":       "white space",
		"aws:///us-east-1a/i-placeholder-asg-x":    "is not an EC2 instance id",
		"aws:///us-east-1a/i-0123456789abcdef0 \n": "is not an EC2 instance id",
	} {
		_, _, err := ParseProviderID(bad)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "providerID") {
			t.Errorf("ParseProviderID(%q) = %v, want an error containing %q", bad, err, want)
		}
	}
}

func TestClassifyLaunchFailure(t *testing.T) {
	for msg, want := range map[string]struct {
		class cloudprovider.InstanceErrorClass
		code  string
	}{
		"Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient m5.xlarge capacity. Launching EC2 instance failed.": {cloudprovider.OutOfResourcesErrorClass, "InsufficientInstanceCapacity"},
		"We currently do not have sufficient p3.2xlarge capacity in the Availability Zone you requested (us-east-1e). Launching EC2 instance failed.":                 {cloudprovider.OutOfResourcesErrorClass, "InsufficientInstanceCapacity"},
		"Could not launch Spot Instances. UnfulfillableCapacity - Unable to fulfill capacity due to your request configuration.":                                      {cloudprovider.OutOfResourcesErrorClass, "UnfulfillableCapacity"},
		"Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity than your current vCPU limit of 32 allows.":                  {cloudprovider.OutOfResourcesErrorClass, "VcpuLimitExceeded"},
		"Could not launch On-Demand Instances. InvalidAMIID.NotFound - The image id '[ami-1]' does not exist. Launching EC2 instance failed.":                         {cloudprovider.OtherErrorClass, "InvalidAMIID.NotFound"},
		"Value (foo) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name. Launching EC2 instance failed.":                             {cloudprovider.OtherErrorClass, launchErrorCode},
	} {
		got := classifyLaunchFailure("asg-1", msg)
		if got.ErrorClass != want.class || got.ErrorCode != want.code || !strings.Contains(got.ErrorMessage, msg) || !strings.Contains(got.ErrorMessage, "asg-1") {
			t.Errorf("%q: got %+v, want %v %s", msg, got, want.class, want.code)
		}
	}
}

// activityAt makes, for tests, a scaling activity started at t0+at whose
// status message is a stock-out's.
func activityAt(t0 time.Time) func(at time.Duration, desc string, code astypes.ScalingActivityStatusCode) astypes.Activity {
	return func(at time.Duration, desc string, code astypes.ScalingActivityStatusCode) astypes.Activity {
		start := t0.Add(at)
		return astypes.Activity{StartTime: &start, Description: &desc, StatusCode: code,
			StatusMessage: ptr("Could not launch On-Demand Instances. InsufficientInstanceCapacity - none left.")}
	}
}

func TestLaunchFailureIsTheLatestFailedLaunchSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	act := activityAt(t0)
	failed := act(2*time.Minute, "Launching a new EC2 instance.  Status Reason: ...", astypes.ScalingActivityStatusCodeFailed)
	ok := act(3*time.Minute, "Launching a new EC2 instance: i-0123456789abcdef0", astypes.ScalingActivityStatusCodeSuccessful)
	term := act(4*time.Minute, "Terminating EC2 instance: i-0123456789abcdef0", astypes.ScalingActivityStatusCodeFailed)
	if got := launchFailure("a", []astypes.Activity{failed}, t0); got == nil || got.ErrorClass != cloudprovider.OutOfResourcesErrorClass {
		t.Fatalf("a failed launch: %+v", got)
	}
	if got := launchFailure("a", []astypes.Activity{term, ok, failed}, t0); got != nil {
		t.Fatalf("a failure followed by a successful launch: %+v", got)
	}
	if got := launchFailure("a", []astypes.Activity{failed}, t0.Add(5*time.Minute)); got != nil {
		t.Fatalf("a failure before tidal's request: %+v", got)
	}
	if got := launchFailure("a", []astypes.Activity{term}, t0); got != nil {
		t.Fatalf("a failed termination is not a launch failure: %+v", got)
	}
	retry := act(150*time.Second, "Launching a new EC2 instance", astypes.ScalingActivityStatusCodeInProgress)
	if got := launchFailure("a", []astypes.Activity{retry, failed}, t0); got == nil {
		t.Fatal("a failure followed by a retry still in flight: no failure")
	}
}

func ptr[T any](v T) *T { return &v }

func TestBuildTemplateFromInstanceTypeAndTags(t *testing.T) {
	in := templateInput{
		ASG: "workers_Blue", Region: "eu-west-1", Zones: []string{"eu-west-1b", "eu-west-1a"},
		Spec:         launchSpec{InstanceType: "m5.xlarge", RootVolumeGiB: 100},
		InstanceType: &instanceTypeInfo{Name: "m5.xlarge", VCPUs: 4, MemoryMiB: 16384, Architectures: []string{"x86_64"}, MaxENIs: 4, IPv4PerENI: 15},
		Reservation:  NodeReservationEKS,
		Tags: map[string]string{
			LabelTagPrefix + "team":                           "blue",
			LabelTagPrefix + "kubernetes.io/os":               "linux",
			LabelTagPrefix + "bad key!":                       "x",
			TaintTagPrefix + "dedicated":                      "blue:NoSchedule",
			TaintTagPrefix + "example.com/drain":              ":PreferNoSchedule",
			TaintTagPrefix + "broken":                         "yes",
			TaintTagPrefix + "sometimes":                      "x:Sometimes",
			ResourceTagPrefix + "ephemeral-storage":           "50Gi",
			ResourceTagPrefix + "example.com/dongle":          "2",
			ResourceTagPrefix + "hugepages-2Mi":               "lots",
			eksNodegroupTag:                                   "blue-ng",
			"k8s.io/cluster-autoscaler/enabled":               "true",
			OptionTagPrefix + "scaledownutilizationthreshold": "0.4",
		},
	}
	n, warnings, err := buildTemplate(in)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelInstanceTypeStable: "m5.xlarge",
		corev1.LabelTopologyRegion: "eu-west-1", corev1.LabelTopologyZone: "eu-west-1a", LabelEBSCSIZone: "eu-west-1a",
		corev1.LabelHostname: "template-node-for-workers-blue", "team": "blue", LabelEKSNodegroup: "blue-ng",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if n.Name != "template-node-for-workers-blue" {
		t.Errorf("name %q", n.Name)
	}
	if len(n.Labels) != len(wantLabels) {
		t.Errorf("labels %v, want exactly %v", n.Labels, wantLabels)
	}
	if len(n.Spec.Taints) != 2 || n.Spec.Taints[0] != (corev1.Taint{Key: "dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}) ||
		n.Spec.Taints[1] != (corev1.Taint{Key: "example.com/drain", Effect: corev1.TaintEffectPreferNoSchedule}) {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	capacity, alloc := n.Status.Capacity, n.Status.Allocatable
	dongles := capacity["example.com/dongle"]
	if capacity.Cpu().Value() != 4 || capacity.Memory().Value() != 16384<<20 || capacity.Pods().Value() != 58 ||
		capacity.StorageEphemeral().Value() != 50<<30 || dongles.Value() != 2 {
		t.Errorf("capacity %v", capacity)
	}
	// EKS AMI reservation: 80m CPU for 4 cores, 255Mi + 11Mi x 58 pods +
	// 100Mi eviction, 1Gi + 10% of ephemeral storage.
	if alloc.Cpu().MilliValue() != 3920 || alloc.Memory().Value() != (16384-255-11*58-100)<<20 || alloc.Pods().Value() != 58 ||
		alloc.StorageEphemeral().Value() != 50<<30-1<<30-5<<30 {
		t.Errorf("allocatable %v", alloc)
	}
	if len(warnings) != 4 {
		t.Errorf("warnings %q, want 4 (bad label key, taint without effect, unknown effect, bad quantity)", warnings)
	}
	for _, w := range []string{"bad key!", "taint/broken", "Sometimes", "hugepages-2Mi"} {
		if !strings.Contains(strings.Join(warnings, "\n"), w) {
			t.Errorf("no warning about %q in %q", w, warnings)
		}
	}
	if c := n.Status.Conditions; len(c) != 1 || c[0].Type != corev1.NodeReady || c[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions %v", c)
	}
}

func TestBuildTemplateVariants(t *testing.T) {
	gpu := &instanceTypeInfo{Name: "g4dn.xlarge", VCPUs: 4, MemoryMiB: 16384, Architectures: []string{"x86_64"}, MaxENIs: 3, IPv4PerENI: 10,
		GPUs: 1, GPUManufacturer: "NVIDIA", GPUName: "T4"}
	n, _, err := buildTemplate(templateInput{ASG: "gpu", Region: "us-east-1", Zones: []string{"us-east-1a"}, InstanceType: gpu,
		Spec: launchSpec{InstanceType: "g4dn.xlarge"}, MaxPods: 20, Reservation: NodeReservationNone})
	if err != nil {
		t.Fatal(err)
	}
	gpus := n.Status.Allocatable[ResourceNvidiaGPU]
	if gpus.Value() != 1 || n.Status.Capacity.Pods().Value() != 20 || n.Status.Allocatable.Cpu().Value() != 4 {
		t.Fatalf("GPU template with --aws-max-pods=20 and no reservation: %v / %v", n.Status.Capacity, n.Status.Allocatable)
	}
	if _, ok := n.Status.Capacity[corev1.ResourceEphemeralStorage]; ok {
		t.Fatal("ephemeral storage invented without a root volume or a tag")
	}
	arm := &instanceTypeInfo{Name: "m6g.large", VCPUs: 2, MemoryMiB: 8192, Architectures: []string{"arm64"}}
	n, _, err = buildTemplate(templateInput{ASG: "arm", Region: "us-east-1", Zones: []string{"us-east-1a"}, InstanceType: arm, Spec: launchSpec{InstanceType: "m6g.large"}})
	if err != nil || n.Labels[corev1.LabelArchStable] != "arm64" || n.Status.Capacity.Pods().Value() != defaultMaxPods {
		t.Fatalf("arm64 template: %v %v", n.Labels, err)
	}
	if _, _, err := buildTemplate(templateInput{ASG: "nozone", InstanceType: arm}); err == nil || !strings.Contains(err.Error(), "no availability zone") {
		t.Fatalf("no zone: %v", err)
	}
	if _, _, err := buildTemplate(templateInput{ASG: "notype", Zones: []string{"z"}}); err == nil {
		t.Fatal("a template without an instance type or requirements was built")
	}
}

func TestOptionsFromTags(t *testing.T) {
	defaults := cloudprovider.NodeGroupAutoscalingOptions{ScaleDownUtilizationThreshold: 0.5, ScaleDownGpuUtilizationThreshold: 0.5,
		ScaleDownUnneededTime: 10 * time.Minute, ScaleDownUnreadyTime: 20 * time.Minute, MaxNodeProvisionTime: 15 * time.Minute}
	opts, ok, warnings := optionsFromTags(map[string]string{
		OptionTagPrefix + "scaleDownGpuUtilizationThreshold": "0.2",
		OptionTagPrefix + "scaledownunreadytime":             "5m",
		OptionTagPrefix + "maxnodeprovisiontime":             "7m",
		OptionTagPrefix + "maxNodeLifetime":                  "168h",
		OptionTagPrefix + "scaledownutilizationthreshold":    "1.5",
		OptionTagPrefix + "colour":                           "red",
	}, defaults)
	if !ok || opts.ScaleDownGpuUtilizationThreshold != 0.2 || opts.ScaleDownUnreadyTime != 5*time.Minute ||
		opts.MaxNodeProvisionTime != 7*time.Minute || opts.MaxNodeLifetime != 168*time.Hour || opts.ScaleDownUtilizationThreshold != 0.5 || len(warnings) != 2 {
		t.Fatalf("options %+v ok=%v warnings %q", opts, ok, warnings)
	}
	if _, ok, _ := optionsFromTags(map[string]string{"other": "x"}, defaults); ok {
		t.Fatal("options reported for a group without option tags")
	}
}

func TestPriceTable(t *testing.T) {
	table, err := ParsePriceTable([]byte("m5.large: 0.096\nm5.xlarge: 0.192\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := pricing{cloud: &Cloud{cfg: Config{Prices: table}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.xlarge"}}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if price, err := p.NodePrice(node, start, start.Add(90*time.Minute)); err != nil || price < 0.2879 || price > 0.2881 {
		t.Fatalf("price %v %v, want 0.288", price, err)
	}
	node.Labels[corev1.LabelInstanceTypeStable] = "c5.large"
	if _, err := p.NodePrice(node, start, start); err == nil || !strings.Contains(err.Error(), "c5.large is not in --aws-price-table") {
		t.Fatalf("unknown type: %v", err)
	}
	for _, bad := range []string{"", "m5.large: cheap", "m5.large: -1", "- m5.large"} {
		if _, err := ParsePriceTable([]byte(bad)); err == nil {
			t.Errorf("price table %q accepted", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(path, []byte(`{"t3.medium": 0.0416}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if table, err := LoadPriceTable(path); err != nil || table["t3.medium"] != 0.0416 {
		t.Fatalf("load %v %v", table, err)
	}
	if _, err := LoadPriceTable(path + ".missing"); err == nil || !strings.Contains(err.Error(), "--aws-price-table") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestReadLaunchesAndJudgeThem(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	act := activityAt(t0)
	launch := func(at time.Duration, code astypes.ScalingActivityStatusCode) astypes.Activity {
		return act(at, "Launching a new EC2 instance: i-0123456789abcdef0", code)
	}
	failed := func(at time.Duration) astypes.Activity {
		return act(at, "Launching a new EC2 instance.  Status Reason: ...", astypes.ScalingActivityStatusCodeFailed)
	}
	const (
		ok       = astypes.ScalingActivityStatusCodeSuccessful
		running  = astypes.ScalingActivityStatusCodeInProgress
		hook     = astypes.ScalingActivityStatusCodeMidLifecycleAction
		warmup   = astypes.ScalingActivityStatusCodeWaitingForInstanceWarmup
		canceled = astypes.ScalingActivityStatusCodeCancelled
	)
	for _, tc := range []struct {
		name                string
		activities          []astypes.Activity
		wanted              int
		failed              bool
		succeeded, inFlight int
		verdict             watchVerdict
	}{
		{name: "nothing started yet", wanted: 2, verdict: keepWatching},
		{name: "two in progress", activities: []astypes.Activity{launch(time.Second, running), launch(time.Second, hook)},
			wanted: 2, inFlight: 2, verdict: keepWatching},
		{name: "one in service, one warming up", activities: []astypes.Activity{launch(time.Second, warmup), launch(time.Second, ok)},
			wanted: 2, succeeded: 1, inFlight: 1, verdict: keepWatching},
		{name: "both in service", activities: []astypes.Activity{launch(2*time.Second, ok), launch(time.Second, ok)},
			wanted: 2, succeeded: 2, verdict: launchesDone},
		{name: "fewer started than wanted", activities: []astypes.Activity{launch(time.Second, ok)},
			wanted: 2, succeeded: 1, verdict: keepWatching},
		{name: "stock-out", activities: []astypes.Activity{failed(time.Second)}, wanted: 1, failed: true, verdict: launchFailed},
		{name: "stock-out after one launched, in any order", activities: []astypes.Activity{launch(time.Second, ok), failed(3 * time.Second), failed(2 * time.Second)},
			wanted: 3, succeeded: 1, failed: true, verdict: launchFailed},
		{name: "a retry in flight after a failure keeps the failure", activities: []astypes.Activity{launch(3*time.Second, running), failed(2 * time.Second)},
			wanted: 1, inFlight: 1, failed: true, verdict: launchFailed},
		{name: "a retry that succeeded after a failure clears it", activities: []astypes.Activity{launch(3*time.Second, ok), failed(2 * time.Second)},
			wanted: 1, succeeded: 1, verdict: launchesDone},
		{name: "a failure after a success stands", activities: []astypes.Activity{failed(3 * time.Second), launch(2*time.Second, ok)},
			wanted: 2, succeeded: 1, failed: true, verdict: launchFailed},
		{name: "launches before since are not the watch's", activities: []astypes.Activity{failed(-time.Second), launch(-time.Minute, running)},
			wanted: 1, verdict: keepWatching},
		{name: "terminations are not launches", activities: []astypes.Activity{
			act(5*time.Second, "Terminating EC2 instance: i-0123456789abcdef0", astypes.ScalingActivityStatusCodeFailed),
			act(4*time.Second, "Terminating EC2 instance: i-0123456789abcdef1", running), launch(time.Second, ok)},
			wanted: 1, succeeded: 1, verdict: launchesDone},
		{name: "a cancelled launch is neither", activities: []astypes.Activity{launch(time.Second, canceled)}, wanted: 1, verdict: keepWatching},
		{name: "no start time", activities: []astypes.Activity{{Description: ptr("Launching a new EC2 instance"), StatusCode: running}},
			wanted: 1, verdict: keepWatching},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := readLaunches("a", tc.activities, t0)
			if (l.failure != nil) != tc.failed || l.succeeded != tc.succeeded || l.inFlight != tc.inFlight {
				t.Fatalf("readLaunches = %+v, want failed %v, %d succeeded, %d in flight", l, tc.failed, tc.succeeded, tc.inFlight)
			}
			if tc.failed && (l.failure.ErrorClass != cloudprovider.OutOfResourcesErrorClass || l.failure.ErrorCode != "InsufficientInstanceCapacity") {
				t.Fatalf("failure %+v", l.failure)
			}
			if got := judgeLaunches(l, tc.wanted); got != tc.verdict {
				t.Fatalf("judgeLaunches(%+v, %d) = %v, want %v", l, tc.wanted, got, tc.verdict)
			}
		})
	}
}

func TestWatchDelayDoublesAfterFailedReadsUpToABound(t *testing.T) {
	for failed, want := range map[int]time.Duration{-1: 2 * time.Second, 0: 2 * time.Second, 1: 4 * time.Second, 2: 8 * time.Second,
		4: 32 * time.Second, 5: 32 * time.Second, 1000: 32 * time.Second} {
		if got := watchDelay(2*time.Second, failed); got != want {
			t.Errorf("watchDelay(2s, %d) = %v, want %v", failed, got, want)
		}
	}
}

// maxnodeprovisiontime, in any case of the key, replaces the flag's time;
// a value that is not a positive duration is reported and leaves the flag's.
func TestMaxNodeProvisionTimeTag(t *testing.T) {
	defaults := cloudprovider.NodeGroupAutoscalingOptions{MaxNodeProvisionTime: 15 * time.Minute}
	for _, tc := range []struct {
		key, value string
		want       time.Duration
		wantOK     bool
		wantWarn   string
	}{
		{key: "maxnodeprovisiontime", value: "5m", want: 5 * time.Minute, wantOK: true},
		{key: "MaxNodeProvisionTime", value: " 1h ", want: time.Hour, wantOK: true},
		{key: "maxnodeprovisiontime", value: "10", want: 15 * time.Minute, wantWarn: "not a duration"},
		{key: "maxnodeprovisiontime", value: "-1m", want: 15 * time.Minute, wantWarn: "not a duration"},
		{key: "maxnodeprovisiontime", value: "0s", want: 15 * time.Minute, wantWarn: "not a duration"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			got, ok, warnings := optionsFromTags(map[string]string{OptionTagPrefix + tc.key: tc.value, "team": "x"}, defaults)
			if got.MaxNodeProvisionTime != tc.want || ok != tc.wantOK {
				t.Fatalf("got %v (ok %v), want %v (ok %v); warnings %q", got.MaxNodeProvisionTime, ok, tc.want, tc.wantOK, warnings)
			}
			if tc.wantWarn == "" && len(warnings) > 0 || tc.wantWarn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.wantWarn)) {
				t.Fatalf("warnings %q, want one containing %q", warnings, tc.wantWarn)
			}
		})
	}
}

// The labels templates derive from the group's name or zone are the ones
// balancing sets aside.
func TestBalancingIgnoresTheGroupAndZoneLabels(t *testing.T) {
	ignored := (&Cloud{}).BalancingIgnoredLabels()
	for _, l := range []string{LabelEKSNodegroup, LabelEBSCSIZone} {
		if !slices.Contains(ignored, l) {
			t.Errorf("%s is not set aside for balancing (%v)", l, ignored)
		}
	}
}
