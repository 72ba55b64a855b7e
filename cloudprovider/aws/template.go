package aws

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Cluster Autoscaler's node-template tags on an Auto Scaling Group.
const (
	// LabelTagPrefix + key = value: a label the group's nodes carry.
	LabelTagPrefix = "k8s.io/cluster-autoscaler/node-template/label/"
	// TaintTagPrefix + key = value:Effect: a taint the nodes carry.
	TaintTagPrefix = "k8s.io/cluster-autoscaler/node-template/taint/"
	// ResourceTagPrefix + name = quantity: a resource of the nodes,
	// replacing what the instance type says (e.g. ephemeral-storage).
	ResourceTagPrefix = "k8s.io/cluster-autoscaler/node-template/resources/"
	// OptionTagPrefix + option = value: a per-group autoscaling option.
	OptionTagPrefix = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"
	// eksNodegroupTag names the EKS managed node group that owns an ASG.
	eksNodegroupTag = "eks:nodegroup-name"
)

// Labels of template nodes beyond the well-known ones.
const (
	// LabelEBSCSIZone is the zone label of the EBS CSI driver.
	LabelEBSCSIZone = "topology.ebs.csi.aws.com/zone"
	// LabelEKSNodegroup is the label EKS puts on managed node groups' nodes.
	LabelEKSNodegroup = "eks.amazonaws.com/nodegroup"
	// GPULabel marks GPU nodes, as in Cluster Autoscaler's AWS provider.
	GPULabel = "k8s.amazonaws.com/accelerator"
	// ResourceNvidiaGPU and ResourceAMDGPU are the device plugins' resources.
	ResourceNvidiaGPU                     = cloudprovider.ResourceNvidiaGPU
	ResourceAMDGPU    corev1.ResourceName = "amd.com/gpu"
)

// defaultMaxPods is the pods capacity when neither a flag nor the instance
// type's network limits say otherwise (the kubelet's default).
const defaultMaxPods = 110

// templateInput is everything a template node is built from.
type templateInput struct {
	ASG    string
	Region string
	// Zones are the group's availability zones; the template takes the
	// first in sorted order.
	Zones        []string
	Tags         map[string]string
	Spec         launchSpec
	InstanceType *instanceTypeInfo // nil with attribute-based selection
	// MaxPods overrides the pods capacity when positive.
	MaxPods     int
	Reservation string
}

// buildTemplate makes the node a group would create next. Problems with
// single tags do not fail the template: they are returned as warnings and
// the tag is ignored, as Cluster Autoscaler ignores them.
func buildTemplate(in templateInput) (*corev1.Node, []string, error) {
	if len(in.Zones) == 0 {
		return nil, nil, fmt.Errorf("Auto Scaling Group %s has no availability zone", in.ASG)
	}
	zones := append([]string(nil), in.Zones...)
	sort.Strings(zones)
	zone := zones[0]

	capacity := corev1.ResourceList{}
	arch := "amd64"
	switch {
	case in.InstanceType != nil:
		t := in.InstanceType
		if t.VCPUs <= 0 || t.MemoryMiB <= 0 {
			return nil, nil, fmt.Errorf("instance type %s has %d vCPUs and %d MiB of memory", t.Name, t.VCPUs, t.MemoryMiB)
		}
		capacity[corev1.ResourceCPU] = *resource.NewQuantity(t.VCPUs, resource.DecimalSI)
		capacity[corev1.ResourceMemory] = *resource.NewQuantity(t.MemoryMiB*1024*1024, resource.BinarySI)
		if t.GPUs > 0 {
			switch strings.ToLower(t.GPUManufacturer) {
			case "nvidia":
				capacity[ResourceNvidiaGPU] = *resource.NewQuantity(t.GPUs, resource.DecimalSI)
			case "amd":
				capacity[ResourceAMDGPU] = *resource.NewQuantity(t.GPUs, resource.DecimalSI)
			}
		}
		arch = kubeArch(t.Architectures)
	case in.Spec.Requirements != nil:
		r := in.Spec.Requirements
		if r.VCPUs <= 0 || r.MemoryMiB <= 0 {
			return nil, nil, fmt.Errorf("%s ask for at least %d vCPUs and %d MiB: not enough to build a template", in.Spec.Source, r.VCPUs, r.MemoryMiB)
		}
		capacity[corev1.ResourceCPU] = *resource.NewQuantity(r.VCPUs, resource.DecimalSI)
		capacity[corev1.ResourceMemory] = *resource.NewQuantity(r.MemoryMiB*1024*1024, resource.BinarySI)
	default:
		return nil, nil, fmt.Errorf("Auto Scaling Group %s: no instance type to build a template from", in.ASG)
	}
	pods := int64(defaultMaxPods)
	switch {
	case in.MaxPods > 0:
		pods = int64(in.MaxPods)
	case in.InstanceType != nil && in.InstanceType.MaxENIs > 0 && in.InstanceType.IPv4PerENI > 1:
		pods = eniMaxPods(in.InstanceType.MaxENIs, in.InstanceType.IPv4PerENI)
	}
	capacity[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	if in.Spec.RootVolumeGiB > 0 {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(in.Spec.RootVolumeGiB<<30, resource.BinarySI)
	}

	tagResources, warnings := resourcesFromTags(in.Tags)
	for name, q := range tagResources {
		capacity[name] = q
	}
	allocatable := capacity.DeepCopy()
	if in.Reservation == NodeReservationEKS {
		allocatable = eksAllocatable(capacity)
	}

	name := templateNodeName(in.ASG)
	labels := map[string]string{
		corev1.LabelHostname:       name,
		corev1.LabelArchStable:     arch,
		corev1.LabelOSStable:       "linux",
		corev1.LabelTopologyRegion: in.Region,
		corev1.LabelTopologyZone:   zone,
		LabelEBSCSIZone:            zone,
	}
	if in.InstanceType != nil {
		labels[corev1.LabelInstanceTypeStable] = in.InstanceType.Name
	}
	tagLabels, w := labelsFromTags(in.Tags)
	warnings = append(warnings, w...)
	if ng := in.Tags[eksNodegroupTag]; ng != "" {
		if msgs := validation.IsValidLabelValue(ng); len(msgs) > 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s: %q is not a valid label value: %s", eksNodegroupTag, ng, strings.Join(msgs, "; ")))
		} else {
			labels[LabelEKSNodegroup] = ng
		}
	}
	for k, v := range tagLabels {
		labels[k] = v
	}
	taints, w := taintsFromTags(in.Tags)
	warnings = append(warnings, w...)

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "template node"},
			},
		},
	}
	return node, warnings, nil
}

// eniMaxPods is the VPC CNI's pod limit of an instance type without prefix
// delegation: one IP per pod on every interface but the primary address of
// each, plus two host-network pods.
func eniMaxPods(enis, ipsPerENI int64) int64 { return enis*(ipsPerENI-1) + 2 }

// eksAllocatable subtracts what the EKS AMIs reserve: kube-reserved CPU
// (6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of
// the rest), kube-reserved memory (255Mi + 11Mi per pod) plus the 100Mi
// eviction threshold, and 1Gi plus the 10% eviction threshold of
// ephemeral storage.
func eksAllocatable(capacity corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	if cpu, ok := capacity[corev1.ResourceCPU]; ok {
		cores := cpu.MilliValue() / 1000
		var reserved float64
		for i := int64(1); i <= cores; i++ {
			switch {
			case i == 1:
				reserved += 60
			case i == 2:
				reserved += 10
			case i <= 4:
				reserved += 5
			default:
				reserved += 2.5
			}
		}
		out[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(0, cpu.MilliValue()-int64(reserved+0.5)), resource.DecimalSI)
	}
	if mem, ok := capacity[corev1.ResourceMemory]; ok {
		pods := capacity.Pods().Value()
		reserved := (255 + 11*pods + 100) << 20
		out[corev1.ResourceMemory] = *resource.NewQuantity(max(0, mem.Value()-reserved), resource.BinarySI)
	}
	if eph, ok := capacity[corev1.ResourceEphemeralStorage]; ok {
		reserved := int64(1<<30) + eph.Value()/10
		out[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(max(0, eph.Value()-reserved), resource.BinarySI)
	}
	return out
}

// kubeArch maps EC2 architectures to kubernetes.io/arch, preferring
// x86_64 and arm64 when a type supports several.
func kubeArch(archs []string) string {
	names := map[string]string{"x86_64": "amd64", "arm64": "arm64", "i386": "386"}
	for _, want := range []string{"x86_64", "arm64", "i386"} {
		for _, a := range archs {
			if a == want {
				return names[a]
			}
		}
	}
	return "amd64"
}

// templateNodeName is a valid node name, and hostname label value, for a
// group's template node: template-node-for-<asg>, with every character
// other than a-z, 0-9 and '-' replaced by '-' (a '.' too: "-." cannot appear
// in a node name), and a long one cut to 63 characters ending
// in a hash of the whole, so that two long names stay apart.
func templateNodeName(asg string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(asg) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.TrimRight("template-node-for-"+b.String(), "-")
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(asg))
	return fmt.Sprintf("%s-%08x", strings.TrimRight(name[:validation.LabelValueMaxLength-9], "-"), h.Sum32())
}

// labelsFromTags reads k8s.io/cluster-autoscaler/node-template/label/<key>.
func labelsFromTags(tags map[string]string) (map[string]string, []string) {
	out := map[string]string{}
	var warnings []string
	for _, k := range sortedKeys(tags) {
		key, ok := strings.CutPrefix(k, LabelTagPrefix)
		if !ok {
			continue
		}
		v := tags[k]
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s: %q is not a valid label key: %s", k, key, strings.Join(msgs, "; ")))
			continue
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s: %q is not a valid label value: %s", k, v, strings.Join(msgs, "; ")))
			continue
		}
		out[key] = v
	}
	return out, warnings
}

// taintsFromTags reads k8s.io/cluster-autoscaler/node-template/taint/<key>
// = <value>:<effect>.
func taintsFromTags(tags map[string]string) ([]corev1.Taint, []string) {
	var out []corev1.Taint
	var warnings []string
	for _, k := range sortedKeys(tags) {
		key, ok := strings.CutPrefix(k, TaintTagPrefix)
		if !ok {
			continue
		}
		raw := tags[k]
		i := strings.LastIndex(raw, ":")
		if i < 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s=%q: want VALUE:EFFECT, e.g. true:NoSchedule", k, raw))
			continue
		}
		value, effect := raw[:i], corev1.TaintEffect(raw[i+1:])
		switch effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			warnings = append(warnings, fmt.Sprintf("tag %s=%q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", k, raw, effect))
			continue
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s: %q is not a valid taint key: %s", k, key, strings.Join(msgs, "; ")))
			continue
		}
		if value != "" {
			if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
				warnings = append(warnings, fmt.Sprintf("tag %s: %q is not a valid taint value: %s", k, value, strings.Join(msgs, "; ")))
				continue
			}
		}
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
	return out, warnings
}

// resourcesFromTags reads k8s.io/cluster-autoscaler/node-template/resources/<name>.
func resourcesFromTags(tags map[string]string) (corev1.ResourceList, []string) {
	out := corev1.ResourceList{}
	var warnings []string
	for _, k := range sortedKeys(tags) {
		name, ok := strings.CutPrefix(k, ResourceTagPrefix)
		if !ok {
			continue
		}
		if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s: %q is not a valid resource name: %s", k, name, strings.Join(msgs, "; ")))
			continue
		}
		// Bounded before parsing: Kubernetes' parser takes hours on a
		// tag such as "1e-2000000000", and a tag is anyone's to write.
		if e := v1alpha1.CheckQuantity(nil, tags[k]); e != nil {
			warnings = append(warnings, fmt.Sprintf("tag %s=%.70q: not a quantity tidal reads: %s", k, tags[k], e.Detail))
			continue
		}
		q, err := resource.ParseQuantity(tags[k])
		if err != nil || q.Sign() < 0 {
			warnings = append(warnings, fmt.Sprintf("tag %s=%q: not a non-negative quantity", k, tags[k]))
			continue
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, warnings
}

// Per-group options read from OptionTagPrefix tags (case-insensitive).
const (
	optScaleDownUtilization    = "scaledownutilizationthreshold"
	optScaleDownGPUUtilization = "scaledowngpuutilizationthreshold"
	optScaleDownUnneededTime   = "scaledownunneededtime"
	optScaleDownUnreadyTime    = "scaledownunreadytime"
	optMaxNodeProvisionTime    = "maxnodeprovisiontime"
	optIgnoreDaemonSetsUtil    = "ignoredaemonsetsutilization"
	optMaxNodeLifetime         = "maxnodelifetime"
)

// optionsFromTags applies the group's autoscaling-options tags to
// defaults. ok is false when the group has no such tag; bad values are
// ignored and reported.
func optionsFromTags(tags map[string]string, defaults cloudprovider.NodeGroupAutoscalingOptions) (opts cloudprovider.NodeGroupAutoscalingOptions, ok bool, warnings []string) {
	opts = defaults
	for _, k := range sortedKeys(tags) {
		name, found := strings.CutPrefix(k, OptionTagPrefix)
		if !found {
			continue
		}
		v := strings.TrimSpace(tags[k])
		bad := func(want string) {
			warnings = append(warnings, fmt.Sprintf("tag %s=%q: not %s, ignored", k, tags[k], want))
		}
		switch strings.ToLower(name) {
		case optScaleDownUtilization, optScaleDownGPUUtilization:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 0 && f <= 1) {
				bad("a number between 0 and 1")
				continue
			}
			if strings.ToLower(name) == optScaleDownUtilization {
				opts.ScaleDownUtilizationThreshold = f
			} else {
				opts.ScaleDownGpuUtilizationThreshold = f
			}
		case optScaleDownUnneededTime, optScaleDownUnreadyTime, optMaxNodeProvisionTime, optMaxNodeLifetime:
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || (d == 0 && strings.ToLower(name) == optMaxNodeProvisionTime) {
				bad("a duration such as 10m")
				continue
			}
			switch strings.ToLower(name) {
			case optScaleDownUnneededTime:
				opts.ScaleDownUnneededTime = d
			case optScaleDownUnreadyTime:
				opts.ScaleDownUnreadyTime = d
			case optMaxNodeLifetime:
				opts.MaxNodeLifetime = d
			default:
				opts.MaxNodeProvisionTime = d
			}
		case optIgnoreDaemonSetsUtil:
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad("true or false")
				continue
			}
			opts.IgnoreDaemonSetsUtilization = b
		default:
			warnings = append(warnings, fmt.Sprintf("tag %s: unknown autoscaling option %q, ignored", k, name))
			continue
		}
		ok = true
	}
	return opts, ok, warnings
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
