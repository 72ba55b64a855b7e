package aws

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// instanceTypeInfo is what a template needs to know of an instance type.
type instanceTypeInfo struct {
	Name            string
	VCPUs           int64
	MemoryMiB       int64
	Architectures   []string
	GPUs            int64
	GPUManufacturer string
	GPUName         string
	MaxENIs         int64
	IPv4PerENI      int64
}

func instanceTypeFromEC2(t ec2types.InstanceTypeInfo) *instanceTypeInfo {
	info := &instanceTypeInfo{Name: string(t.InstanceType)}
	if t.VCpuInfo != nil {
		info.VCPUs = int64(deref(t.VCpuInfo.DefaultVCpus))
	}
	if t.MemoryInfo != nil {
		info.MemoryMiB = deref(t.MemoryInfo.SizeInMiB)
	}
	if t.ProcessorInfo != nil {
		for _, a := range t.ProcessorInfo.SupportedArchitectures {
			info.Architectures = append(info.Architectures, string(a))
		}
	}
	if t.GpuInfo != nil {
		for _, g := range t.GpuInfo.Gpus {
			info.GPUs += int64(deref(g.Count))
			info.GPUManufacturer = deref(g.Manufacturer)
			info.GPUName = deref(g.Name)
		}
	}
	if t.NetworkInfo != nil {
		info.MaxENIs = int64(deref(t.NetworkInfo.MaximumNetworkInterfaces))
		info.IPv4PerENI = int64(deref(t.NetworkInfo.Ipv4AddressesPerInterface))
	}
	return info
}

// instanceTypeCache holds instance type descriptions; they do not change,
// so they are kept for the life of the process.
type instanceTypeCache struct {
	mu    sync.Mutex
	known map[string]*instanceTypeInfo
}

func (c *instanceTypeCache) get(name string) *instanceTypeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[name]
}

// ensure describes the named types not known yet, 100 per call, following
// NextToken. A batch that fails is retried type by type, so one unknown
// type does not hide the others; the errors of types that could not be
// described are returned by name.
func (c *instanceTypeCache) ensure(ctx context.Context, api EC2API, names []string) map[string]error {
	c.mu.Lock()
	var missing []string
	seen := map[string]bool{}
	for _, n := range names {
		if n != "" && c.known[n] == nil && !seen[n] {
			missing = append(missing, n)
			seen[n] = true
		}
	}
	c.mu.Unlock()
	sort.Strings(missing)
	failed := map[string]error{}
	for start := 0; start < len(missing); start += 100 {
		batch := missing[start:min(start+100, len(missing))]
		if err := c.describe(ctx, api, batch); err != nil {
			if len(batch) == 1 {
				failed[batch[0]] = err
				continue
			}
			for _, n := range batch {
				if err := c.describe(ctx, api, []string{n}); err != nil {
					failed[n] = err
				}
			}
		}
	}
	return failed
}

func (c *instanceTypeCache) describe(ctx context.Context, api EC2API, names []string) error {
	in := &ec2.DescribeInstanceTypesInput{}
	for _, n := range names {
		in.InstanceTypes = append(in.InstanceTypes, ec2types.InstanceType(n))
	}
	found := map[string]*instanceTypeInfo{}
	pages := ec2.NewDescribeInstanceTypesPaginator(api, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeInstanceTypes %v: %w", names, err)
		}
		for _, t := range out.InstanceTypes {
			info := instanceTypeFromEC2(t)
			found[info.Name] = info
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil {
		c.known = map[string]*instanceTypeInfo{}
	}
	for k, v := range found {
		c.known[k] = v
	}
	for _, n := range names {
		if found[n] == nil {
			return fmt.Errorf("DescribeInstanceTypes did not describe instance type %q", n)
		}
	}
	return nil
}

// launchSpec is what a group launches, as far as a template node cares.
type launchSpec struct {
	// InstanceType is empty when the group selects instance types by
	// attributes (Requirements).
	InstanceType string
	Requirements *requirements
	// RootVolumeGiB is the size of the root EBS volume, 0 when unknown.
	RootVolumeGiB int64
	// Source says where the instance type came from, for messages.
	Source string
	// Spot is set when the launch template's instance market options or
	// the launch configuration's spot price ask for spot instances.
	Spot bool
}

// requirements is the lower bound of attribute-based instance type
// selection: the smallest instance the group may launch.
type requirements struct {
	VCPUs     int64
	MemoryMiB int64
}

// launchTemplateCache keeps launch template versions. A numbered version
// never changes and is kept for good; $Latest and $Default are read again
// after ttl.
type launchTemplateCache struct {
	ttl time.Duration
	mu  sync.Mutex
	lts map[ltKey]ltEntry
	lcs map[string]astypes.LaunchConfiguration
}

type ltKey struct{ id, name, version string }

type ltEntry struct {
	data    *ec2types.ResponseLaunchTemplateData
	fetched time.Time
	// number is the version's number.
	number int64
}

func (k ltKey) String() string {
	ref := k.id
	if ref == "" {
		ref = k.name
	}
	return fmt.Sprintf("launch template %s version %s", ref, k.version)
}

func keyOf(spec *astypes.LaunchTemplateSpecification) ltKey {
	k := ltKey{id: deref(spec.LaunchTemplateId), name: deref(spec.LaunchTemplateName), version: deref(spec.Version)}
	if k.version == "" {
		k.version = "$Default"
	}
	return k
}

func (k ltKey) numbered() bool {
	_, err := strconv.Atoi(k.version)
	return err == nil
}

func (c *launchTemplateCache) templateData(ctx context.Context, api EC2API, k ltKey, now time.Time) (*ec2types.ResponseLaunchTemplateData, error) {
	c.mu.Lock()
	e, ok := c.lts[k]
	c.mu.Unlock()
	if ok && (k.numbered() || now.Sub(e.fetched) < c.ttl) {
		return e.data, nil
	}
	in := &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{k.version}}
	if k.id != "" {
		in.LaunchTemplateId = aws.String(k.id)
	} else {
		in.LaunchTemplateName = aws.String(k.name)
	}
	out, err := api.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("DescribeLaunchTemplateVersions for %s: %w", k, err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
		return nil, fmt.Errorf("DescribeLaunchTemplateVersions returned no data for %s", k)
	}
	data := out.LaunchTemplateVersions[0].LaunchTemplateData
	c.mu.Lock()
	if c.lts == nil {
		c.lts = map[ltKey]ltEntry{}
	}
	c.lts[k] = ltEntry{data: data, fetched: now, number: aws.ToInt64(out.LaunchTemplateVersions[0].VersionNumber)}
	c.mu.Unlock()
	return data, nil
}

func (c *launchTemplateCache) launchConfiguration(ctx context.Context, api AutoScalingAPI, name string) (astypes.LaunchConfiguration, error) {
	c.mu.Lock()
	lc, ok := c.lcs[name]
	c.mu.Unlock()
	if ok {
		return lc, nil
	}
	out, err := api.DescribeLaunchConfigurations(ctx, &autoscaling.DescribeLaunchConfigurationsInput{LaunchConfigurationNames: []string{name}})
	if err != nil {
		return lc, fmt.Errorf("DescribeLaunchConfigurations %s: %w", name, err)
	}
	if len(out.LaunchConfigurations) == 0 {
		return lc, fmt.Errorf("launch configuration %s does not exist", name)
	}
	lc = out.LaunchConfigurations[0]
	c.mu.Lock()
	if c.lcs == nil {
		c.lcs = map[string]astypes.LaunchConfiguration{}
	}
	c.lcs[name] = lc
	c.mu.Unlock()
	return lc, nil
}

// resolveLaunchSpec works out what the group launches, as Cluster
// Autoscaler does: a mixed instances policy's first instance type override
// (or its instance requirements), else the launch template's instance type
// (or requirements), else the launch configuration's. A group whose
// configuration names no type falls back to the type of its instances.
func (c *launchTemplateCache) resolveLaunchSpec(ctx context.Context, api Clients, g *astypes.AutoScalingGroup, now time.Time) (launchSpec, error) {
	name := deref(g.AutoScalingGroupName)
	var spec launchSpec
	var ltData *ec2types.ResponseLaunchTemplateData
	var ltErr error
	var ltRef ltKey
	switch {
	case g.MixedInstancesPolicy != nil && g.MixedInstancesPolicy.LaunchTemplate != nil:
		lt := g.MixedInstancesPolicy.LaunchTemplate
		if lt.LaunchTemplateSpecification != nil {
			ltRef = keyOf(lt.LaunchTemplateSpecification)
			ltData, ltErr = c.templateData(ctx, api.EC2, ltRef, now)
		}
		for _, o := range lt.Overrides {
			if t := deref(o.InstanceType); t != "" {
				spec.InstanceType, spec.Source = t, "the first instance type override of its mixed instances policy"
				break
			}
		}
		if spec.InstanceType == "" {
			for _, o := range lt.Overrides {
				if r := requirementsFromASG(o.InstanceRequirements); r != nil {
					spec.Requirements, spec.Source = r, "the instance requirements of its mixed instances policy"
					break
				}
			}
		}
	case g.LaunchTemplate != nil:
		ltRef = keyOf(g.LaunchTemplate)
		ltData, ltErr = c.templateData(ctx, api.EC2, ltRef, now)
	case deref(g.LaunchConfigurationName) != "":
		lc, err := c.launchConfiguration(ctx, api.AutoScaling, deref(g.LaunchConfigurationName))
		if err != nil {
			return fallbackToInstances(g, spec, err)
		}
		spec.InstanceType, spec.Source = deref(lc.InstanceType), "launch configuration "+deref(lc.LaunchConfigurationName)
		spec.Spot = deref(lc.SpotPrice) != ""
		for _, b := range lc.BlockDeviceMappings {
			if b.Ebs != nil && deref(b.Ebs.VolumeSize) > 0 {
				spec.RootVolumeGiB = int64(deref(b.Ebs.VolumeSize))
				break
			}
		}
	}
	if ltData != nil {
		spec.RootVolumeGiB = rootVolumeGiB(ltData.BlockDeviceMappings)
		spec.Spot = ltData.InstanceMarketOptions != nil && ltData.InstanceMarketOptions.MarketType == ec2types.MarketTypeSpot
		if spec.InstanceType == "" && spec.Requirements == nil {
			if t := string(ltData.InstanceType); t != "" {
				spec.InstanceType, spec.Source = t, ltRef.String()
			} else if r := requirementsFromEC2(ltData.InstanceRequirements); r != nil {
				spec.Requirements, spec.Source = r, "the instance requirements of "+ltRef.String()
			}
		}
	}
	if spec.InstanceType == "" && spec.Requirements == nil {
		err := ltErr
		if err == nil {
			err = fmt.Errorf("Auto Scaling Group %s has no launch template, mixed instances policy or launch configuration that names an instance type", name)
		}
		return fallbackToInstances(g, spec, err)
	}
	return spec, nil
}

// fallbackToInstances takes the instance type most of the group's
// instances have when its launch configuration could not be read; err is
// returned when the group has no instances.
func fallbackToInstances(g *astypes.AutoScalingGroup, spec launchSpec, err error) (launchSpec, error) {
	counts := map[string]int{}
	best := ""
	for _, in := range g.Instances {
		t := deref(in.InstanceType)
		if t == "" {
			continue
		}
		counts[t]++
		if best == "" || counts[t] > counts[best] || counts[t] == counts[best] && t < best {
			best = t
		}
	}
	if best == "" {
		return spec, err
	}
	spec.InstanceType = best
	spec.Source = fmt.Sprintf("the type of its running instances (its launch configuration could not be read: %v)", err)
	return spec, nil
}

func requirementsFromASG(r *astypes.InstanceRequirements) *requirements {
	if r == nil || r.VCpuCount == nil || r.MemoryMiB == nil {
		return nil
	}
	return &requirements{VCPUs: int64(deref(r.VCpuCount.Min)), MemoryMiB: int64(deref(r.MemoryMiB.Min))}
}

func requirementsFromEC2(r *ec2types.InstanceRequirements) *requirements {
	if r == nil || r.VCpuCount == nil || r.MemoryMiB == nil {
		return nil
	}
	return &requirements{VCPUs: int64(deref(r.VCpuCount.Min)), MemoryMiB: int64(deref(r.MemoryMiB.Min))}
}

// rootVolumeGiB is the size of the root EBS volume of a launch template:
// the mapping of /dev/xvda or /dev/sda1, else the first with a size.
func rootVolumeGiB(mappings []ec2types.LaunchTemplateBlockDeviceMapping) int64 {
	var first int64
	for _, m := range mappings {
		if m.Ebs == nil || deref(m.Ebs.VolumeSize) <= 0 {
			continue
		}
		size := int64(deref(m.Ebs.VolumeSize))
		switch deref(m.DeviceName) {
		case "/dev/xvda", "/dev/sda1":
			return size
		}
		if first == 0 {
			first = size
		}
	}
	return first
}
