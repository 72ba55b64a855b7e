package aws

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

const (
	// namesPerDescribe is how many group names one
	// DescribeAutoScalingGroups call may carry.
	namesPerDescribe = 50
	// recordsPerPage is the page size asked of paginated calls.
	recordsPerPage = 100
	// activitiesToRead is how many recent scaling activities are read to
	// find a failed launch and count the launches done (the most one
	// call returns).
	activitiesToRead = 100
	// failureWindow bounds how far back a failed launch is looked for
	// when tidal has not grown the group itself (after a restart).
	failureWindow = time.Hour
	// clockSkew is allowed between tidal's clock and AWS's when matching
	// activities to tidal's requests.
	clockSkew = 10 * time.Second
)

// described is one group as read by a refresh, with what was derived from
// it outside the lock.
type described struct {
	asg         astypes.AutoScalingGroup
	template    *corev1.Node
	templateErr error
	warnings    []string
	// drift says how InService instances differ from what the group
	// launches now, by instance id.
	drift   map[string]string
	failure *cloudprovider.InstanceErrorInfo
	// failureUnknown is set when the scaling activities could not be
	// read: the failure known before stands.
	failureUnknown bool
	// spec is what the group launches (specErr when it could not be
	// worked out); onDemand the share of on-demand instances it
	// launches next (onDemandShare).
	spec     launchSpec
	specErr  error
	onDemand float64
}

// refresh reads every managed group, resolves what they launch, reads the
// scaling activities of groups short of instances, and replaces the cached
// state. When a read fails the cached state is kept (and ages towards
// staleness) and the error is returned.
func (c *Cloud) refresh(ctx context.Context) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	logger := c.logger()
	start := c.clock.Now()
	c.mu.Lock()
	changes := c.changes
	// Everything below is read after seq was taken.
	seq := c.nextSeqLocked()
	c.mu.Unlock()

	found, err := c.describeGroups(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	lastIncrease := map[string]time.Time{}
	for name, g := range c.groups {
		lastIncrease[name] = g.st.lastIncrease
	}
	c.mu.Unlock()

	names := sortedKeys(found)
	results := make(map[string]*described, len(found))
	specs := map[string]launchSpec{}
	specErrs := map[string]error{}
	var typeNames []string
	for _, name := range names {
		g := found[name]
		results[name] = &described{asg: g}
		spec, err := c.lts.resolveLaunchSpec(ctx, c.api, &g, start)
		if err != nil {
			specErrs[name] = err
			results[name].specErr = err
			continue
		}
		specs[name] = spec
		results[name].spec, results[name].onDemand = spec, onDemandShare(&g, spec)
		results[name].drift = driftOf(&g, c.lts.launchedVersion(ctx, c.api, &g, start), allowedTypes(&g, spec))
		typeNames = append(typeNames, spec.InstanceType)
	}
	if c.cfg.CompareImages {
		c.reportImageDrift(c.addImageDrift(ctx, results, start))
	}
	typeErrs := c.types.ensure(ctx, c.api.EC2, typeNames)
	for _, name := range names {
		d := results[name]
		d.template, d.warnings, d.templateErr = c.template(name, &d.asg, specs[name], specErrs[name], typeErrs)
		counted := 0
		for _, in := range d.asg.Instances {
			if (instance{lifecycle: string(in.LifecycleState)}).counts() {
				counted++
			}
		}
		if int(aws.ToInt32(d.asg.DesiredCapacity)) > counted {
			since := start.Add(-failureWindow)
			if t := lastIncrease[name]; !t.IsZero() {
				since = t.Add(-clockSkew)
			}
			activities, err := c.describeActivities(ctx, name)
			if err != nil {
				// Unknown is not "no failure": the last failure read
				// stands (none read, as Cluster Autoscaler, means the
				// group can launch).
				logger.Error(err, "Could not read scaling activities; keeping the last launch failure read, if any", "asg", name)
				d.failureUnknown = true
				continue
			}
			d.failure = launchFailure(name, activities, since)
		}
	}

	c.mu.Lock()
	now := c.clock.Now()
	logs := c.applyLocked(results, now, seq)
	c.lastRefresh = now
	// A change made while this refresh was reading may not be in what it
	// read: read again next time.
	c.dirty = c.changes != changes
	c.mu.Unlock()
	for _, l := range logs {
		l()
	}
	c.refreshSpotPrices(ctx, results)
	logger.V(2).Info("Refreshed Auto Scaling Groups", "groups", len(results), "took", now.Sub(start).Round(time.Millisecond))
	return nil
}

// describeGroups reads the groups named by --nodes, 50 names per call, and
// the groups matching each auto-discovery tag set, following NextToken.
func (c *Cloud) describeGroups(ctx context.Context) (map[string]astypes.AutoScalingGroup, error) {
	found := map[string]astypes.AutoScalingGroup{}
	var names []string
	for _, s := range c.cfg.NodeGroups {
		names = append(names, s.Name)
	}
	for start := 0; start < len(names); start += namesPerDescribe {
		batch := names[start:min(start+namesPerDescribe, len(names))]
		in := &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: batch, MaxRecords: aws.Int32(recordsPerPage)}
		if err := c.describeInto(ctx, in, found); err != nil {
			return nil, fmt.Errorf("describe Auto Scaling Groups %v: %w", batch, err)
		}
	}
	for _, spec := range c.cfg.AutoDiscovery {
		in := &autoscaling.DescribeAutoScalingGroupsInput{Filters: tagFilters(spec), MaxRecords: aws.Int32(recordsPerPage)}
		if err := c.describeInto(ctx, in, found); err != nil {
			return nil, fmt.Errorf("discover Auto Scaling Groups with %s: %w", spec, err)
		}
	}
	return found, nil
}

// tagFilters turns a tag set into DescribeAutoScalingGroups filters, one
// per tag so that a group must carry all of them: tag-key for a key alone,
// tag:<key> for a key with a value.
func tagFilters(spec AutoDiscoverySpec) []astypes.Filter {
	out := make([]astypes.Filter, 0, len(spec.Tags))
	for _, t := range spec.Tags {
		if t.Value == "" {
			out = append(out, astypes.Filter{Name: aws.String("tag-key"), Values: []string{t.Key}})
		} else {
			out = append(out, astypes.Filter{Name: aws.String("tag:" + t.Key), Values: []string{t.Value}})
		}
	}
	return out
}

func (c *Cloud) describeInto(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, found map[string]astypes.AutoScalingGroup) error {
	pages := autoscaling.NewDescribeAutoScalingGroupsPaginator(c.api.AutoScaling, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, g := range out.AutoScalingGroups {
			name := aws.ToString(g.AutoScalingGroupName)
			if _, dup := found[name]; !dup && name != "" {
				found[name] = g
			}
		}
	}
	return nil
}

// describeActivities reads a group's latest scaling activities, newest
// first: one call, for refreshes and for watches of launches in flight.
func (c *Cloud) describeActivities(ctx context.Context, name string) ([]astypes.Activity, error) {
	out, err := c.api.AutoScaling.DescribeScalingActivities(ctx, &autoscaling.DescribeScalingActivitiesInput{
		AutoScalingGroupName: aws.String(name),
		MaxRecords:           aws.Int32(activitiesToRead),
	})
	if err != nil {
		return nil, fmt.Errorf("DescribeScalingActivities %s: %w", name, err)
	}
	return out.Activities, nil
}

// template builds a group's template node from what was read.
func (c *Cloud) template(name string, g *astypes.AutoScalingGroup, spec launchSpec, specErr error, typeErrs map[string]error) (*corev1.Node, []string, error) {
	if specErr != nil {
		return nil, nil, specErr
	}
	in := templateInput{
		ASG: name, Region: c.api.Region, Zones: g.AvailabilityZones, Tags: tagMap(g.Tags), Spec: spec,
		MaxPods: c.cfg.MaxPods, Reservation: c.cfg.NodeReservation,
	}
	if spec.InstanceType != "" {
		if err := typeErrs[spec.InstanceType]; err != nil {
			return nil, nil, fmt.Errorf("instance type %s (from %s): %w", spec.InstanceType, spec.Source, err)
		}
		in.InstanceType = c.types.get(spec.InstanceType)
		if in.InstanceType == nil {
			return nil, nil, fmt.Errorf("instance type %s (from %s) is not known", spec.InstanceType, spec.Source)
		}
	}
	return buildTemplate(in)
}

// requestIDs match the request ids in SDK errors, which differ between
// otherwise equal errors.
var requestIDs = regexp.MustCompile(`RequestID: [^,]*,? ?`)

// errorKey tells whether two errors are the same for logging once.
func errorKey(err error) string { return requestIDs.ReplaceAllString(err.Error(), "") }

func tagMap(tags []astypes.TagDescription) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// applyLocked replaces the cached state with what a refresh read (all of
// it read after seq was taken). It returns the log lines and events to
// emit once the lock is released.
func (c *Cloud) applyLocked(results map[string]*described, now time.Time, seq uint64) []func() {
	logger := c.logger()
	var logs []func()
	explicit := map[string]*cloudprovider.NodeGroupSpec{}
	for i := range c.cfg.NodeGroups {
		explicit[c.cfg.NodeGroups[i].Name] = &c.cfg.NodeGroups[i]
	}
	// Groups named by --nodes that do not exist.
	for _, s := range c.cfg.NodeGroups {
		name := s.Name
		_, ok := results[name]
		switch {
		case !ok && !c.missing[name]:
			c.missing[name] = true
			msg := fmt.Sprintf("Auto Scaling Group %q named by --nodes=%s does not exist in region %s; it is not managed until it appears", name, s, c.api.Region)
			logs = append(logs, func() {
				logger.Error(nil, "Auto Scaling Group not found", "asg", name, "flag", "--nodes="+s.String(), "region", c.api.Region)
				c.events(corev1.EventTypeWarning, EventReasonNodeGroupNotFound, msg)
			})
		case ok && c.missing[name]:
			delete(c.missing, name)
			logs = append(logs, func() { logger.Info("Auto Scaling Group found", "asg", name) })
		}
	}
	// Auto-discovery that finds nothing is most often a tag typo.
	switch none := len(c.cfg.AutoDiscovery) > 0 && len(results) == 0; {
	case none && !c.noneFound:
		c.noneFound = true
		specs := fmt.Sprint(c.cfg.AutoDiscovery)
		logs = append(logs, func() {
			logger.Info("Warning: no Auto Scaling Group carries the auto-discovery tags", "specs", specs, "region", c.api.Region)
		})
	case !none:
		c.noneFound = false
	}
	// Groups that went away.
	for name, g := range c.groups {
		if _, ok := results[name]; !ok {
			g.st.gone = true
			delete(c.groups, name)
			c.stopWatchLocked(name)
			logs = append(logs, func() { logger.Info("Auto Scaling Group no longer managed: not found", "asg", name) })
		}
	}
	c.byInstance = map[string]string{}
	c.order = c.order[:0]
	for _, name := range sortedKeys(results) {
		d := results[name]
		g, ok := c.groups[name]
		if !ok {
			g = &nodeGroup{cloud: c, name: name, explicit: explicit[name]}
			c.groups[name] = g
			logs = append(logs, func() {
				logger.Info("Managing Auto Scaling Group", "asg", name, "explicit", g.explicit != nil,
					"min", aws.ToInt32(d.asg.MinSize), "max", aws.ToInt32(d.asg.MaxSize), "desired", aws.ToInt32(d.asg.DesiredCapacity))
			})
		}
		st := &g.st
		st.asgMin, st.asgMax = int(aws.ToInt32(d.asg.MinSize)), int(aws.ToInt32(d.asg.MaxSize))
		st.desired = int(aws.ToInt32(d.asg.DesiredCapacity))
		st.zones = append(st.zones[:0], d.asg.AvailabilityZones...)
		st.tags = tagMap(d.asg.Tags)
		st.launchType, st.onDemand, st.specErr = d.spec.InstanceType, d.onDemand, d.specErr
		st.drift = d.drift
		st.instances = st.instances[:0]
		for _, in := range d.asg.Instances {
			id := aws.ToString(in.InstanceId)
			st.instances = append(st.instances, instance{id: id, zone: aws.ToString(in.AvailabilityZone), lifecycle: string(in.LifecycleState),
				instanceType: aws.ToString(in.InstanceType)})
			c.byInstance[id] = name
		}
		sort.Slice(st.instances, func(i, j int) bool { return st.instances[i].id < st.instances[j].id })
		c.applyFailureLocked(g, d, seq)
		if c.settleWatchLocked(g, seq) {
			logs = append(logs, func() { logger.V(2).Info("Launches in flight are in service, as a refresh found", "asg", name) })
		}
		st.describedAt = now
		if d.template != nil {
			st.template, st.templateErr = d.template, nil
		} else {
			// Keep the last good template (TemplateNodeInfo returns the
			// error only when there is none); log each new error once.
			err := d.templateErr
			if st.templateErr == nil || errorKey(st.templateErr) != errorKey(err) {
				keeping := st.template != nil
				logs = append(logs, func() {
					logger.Error(err, "Could not build the template node", "asg", name, "keepingPreviousTemplate", keeping)
				})
			}
			st.templateErr = err
		}
		if w := strings.Join(d.warnings, "; "); w != st.warnings {
			st.warnings = w
			for _, msg := range d.warnings {
				logs = append(logs, func() { logger.Info("Ignoring a node-template tag", "asg", name, "problem", msg) })
			}
		}
		if g.explicit != nil {
			lo, hi := g.boundsLocked()
			clamped := ""
			if lo != g.explicit.MinSize || hi != g.explicit.MaxSize {
				clamped = fmt.Sprintf("%d:%d", lo, hi)
			}
			if clamped != st.clamped {
				st.clamped = clamped
				if clamped != "" {
					spec := g.explicit.String()
					asgMin, asgMax := st.asgMin, st.asgMax
					logs = append(logs, func() {
						logger.Info("Sizes of --nodes are outside the Auto Scaling Group's; using the ASG's bounds", "asg", name,
							"flag", "--nodes="+spec, "asgMin", asgMin, "asgMax", asgMax, "min", lo, "max", hi)
					})
				}
			}
		}
		c.order = append(c.order, name)
	}
	return logs
}

// applyFailureLocked sets a group's launch failure from what a refresh
// read, unless the refresh could not read it or began before what is
// known was read (by a watch of launches in flight) or reset (by a new
// request).
func (c *Cloud) applyFailureLocked(g *nodeGroup, d *described, seq uint64) {
	if d.failureUnknown || seq < g.st.failureSeq {
		return
	}
	g.st.failure, g.st.failureSeq = d.failure, seq
}
