package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// instance is one instance of a group, as DescribeAutoScalingGroups lists it.
type instance struct {
	id           string
	zone         string
	lifecycle    string
	instanceType string
}

// state maps an Auto Scaling lifecycle state to the node loop's.
func (in instance) state() cloudprovider.InstanceState {
	switch {
	case strings.HasPrefix(in.lifecycle, "Pending"), strings.HasPrefix(in.lifecycle, "Warmed:Pending"):
		return cloudprovider.InstanceCreating
	case strings.HasPrefix(in.lifecycle, "Terminat"), strings.HasPrefix(in.lifecycle, "Detach"),
		strings.HasPrefix(in.lifecycle, "Warmed:Terminat"):
		return cloudprovider.InstanceDeleting
	}
	return cloudprovider.InstanceRunning
}

// counts reports whether the instance makes up the desired capacity:
// instances going away or in standby do not.
func (in instance) counts() bool {
	return in.state() != cloudprovider.InstanceDeleting && !strings.Contains(in.lifecycle, "Standby")
}

// groupState is what the last refresh (and the changes made since) know of
// a group. It is guarded by Cloud.mu.
type groupState struct {
	asgMin, asgMax, desired int
	zones                   []string
	tags                    map[string]string
	// launchType is the instance type the group launches ("" with
	// attribute-based selection); onDemand the share of on-demand
	// instances among those it launches next; specErr why what it
	// launches is not known.
	launchType string
	onDemand   float64
	specErr    error
	instances  []instance
	// drift says how instances differ from what the group launches now.
	drift map[string]string
	// failure is the error of the group's last failed launch since it was
	// last grown, given to its placeholders.
	failure *cloudprovider.InstanceErrorInfo
	// failureSeq is the sequence number (Cloud.seq) taken before failure
	// was read, or when a request reset it: a read begun earlier is older.
	failureSeq  uint64
	describedAt time.Time
	template    *corev1.Node
	templateErr error
	// lastIncrease is when tidal last grew the group.
	lastIncrease time.Time
	// warnings is the last set of tag problems logged, to log them once.
	warnings string
	// clamped is the last min/max clamping logged, to log it once.
	clamped string
	gone    bool
}

func (s *groupState) counted() int {
	n := 0
	for _, in := range s.instances {
		if in.counts() {
			n++
		}
	}
	return n
}

// convergingLocked reports whether instances are starting, stopping or
// missing.
func (s *groupState) convergingLocked() bool {
	if s.gone {
		return false
	}
	running := 0
	for _, in := range s.instances {
		if in.state() != cloudprovider.InstanceRunning {
			return true
		}
		if in.counts() {
			running++
		}
	}
	return running != s.desired
}

// nodeGroup is an Auto Scaling Group managed by tidal. The object stays the
// same across refreshes.
type nodeGroup struct {
	cloud    *Cloud
	name     string
	explicit *cloudprovider.NodeGroupSpec
	st       groupState
}

var _ cloudprovider.NodeGroup = (*nodeGroup)(nil)

// Id is the Auto Scaling Group's name.
func (g *nodeGroup) Id() string { return g.name }

// MinSize is the ASG's minimum, or the --nodes minimum kept within the
// ASG's bounds.
func (g *nodeGroup) MinSize() int {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	min, _ := g.boundsLocked()
	return min
}

// MaxSize is the ASG's maximum, or the --nodes maximum kept within the
// ASG's bounds.
func (g *nodeGroup) MaxSize() int {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	_, max := g.boundsLocked()
	return max
}

func (g *nodeGroup) boundsLocked() (int, int) {
	lo, hi := g.st.asgMin, g.st.asgMax
	if g.explicit != nil {
		lo = min(max(g.explicit.MinSize, g.st.asgMin), g.st.asgMax)
		hi = max(min(g.explicit.MaxSize, g.st.asgMax), lo)
	}
	return lo, hi
}

// TargetSize is the group's desired capacity.
func (g *nodeGroup) TargetSize() (int, error) {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	if g.st.gone {
		return 0, g.goneErr()
	}
	return g.st.desired, nil
}

func (g *nodeGroup) goneErr() error {
	return fmt.Errorf("Auto Scaling Group %s is no longer managed: it was not found by the last refresh", g.name)
}

// checkActionableLocked refuses changes to a group that is gone or whose
// description is too old to act on.
func (g *nodeGroup) checkActionableLocked(op string) error {
	if g.st.gone {
		return fmt.Errorf("%s: %w", op, g.goneErr())
	}
	age := g.cloud.clock.Now().Sub(g.st.describedAt)
	if age > g.cloud.cfg.MaxStaleness {
		return fmt.Errorf("%s on Auto Scaling Group %s: its description is %v old (read at %s), more than %v; not acting on stale data until a refresh succeeds",
			op, g.name, age.Round(time.Second), g.st.describedAt.UTC().Format(time.RFC3339), g.cloud.cfg.MaxStaleness)
	}
	return nil
}

// IncreaseSize raises the desired capacity by delta with
// SetDesiredCapacity (HonorCooldown=false). While the launches are in
// flight, their scaling activities are watched when someone is to be told
// of failures (NotifyInstanceErrors).
func (g *nodeGroup) IncreaseSize(ctx context.Context, delta int) error {
	if delta <= 0 {
		return fmt.Errorf("Auto Scaling Group %s: increase size by %d: delta must be positive", g.name, delta)
	}
	g.cloud.mu.Lock()
	if err := g.checkActionableLocked("increase size"); err != nil {
		g.cloud.mu.Unlock()
		return err
	}
	from := g.st.desired
	_, hi := g.boundsLocked()
	g.cloud.mu.Unlock()
	to := from + delta
	if to > hi {
		return fmt.Errorf("Auto Scaling Group %s: size %d would exceed max size %d", g.name, to, hi)
	}
	if err := g.setDesired(ctx, from, to, "increase size"); err != nil {
		return err
	}
	g.cloud.mu.Lock()
	g.st.lastIncrease = g.cloud.clock.Now()
	g.st.failure, g.st.failureSeq = nil, g.cloud.nextSeqLocked()
	watched := g.cloud.watchLaunchesLocked(g.name, delta)
	g.cloud.mu.Unlock()
	if watched > 0 {
		g.cloud.logger().V(2).Info("Watching launches in flight", "asg", g.name, "wanted", watched, "interval", g.cloud.cfg.LaunchWatchInterval)
	}
	return nil
}

// DecreaseTargetSize lowers the desired capacity by -delta, cancelling
// instances that have not been launched yet. It refuses to go below the
// number of instances that exist (or the group's minimum): removing those
// is DeleteNodes's job.
func (g *nodeGroup) DecreaseTargetSize(ctx context.Context, delta int) error {
	if delta >= 0 {
		return fmt.Errorf("Auto Scaling Group %s: decrease target size by %d: delta must be negative", g.name, delta)
	}
	g.cloud.mu.Lock()
	if err := g.checkActionableLocked("decrease target size"); err != nil {
		g.cloud.mu.Unlock()
		return err
	}
	from := g.st.desired
	existing := g.st.counted()
	lo, _ := g.boundsLocked()
	g.cloud.mu.Unlock()
	to := from + delta
	switch {
	case to < existing:
		return fmt.Errorf("Auto Scaling Group %s: cannot decrease target size by %d to %d: %d instance(s) exist and only requests not yet launched (%d) can be cancelled",
			g.name, -delta, to, existing, max(0, from-existing))
	case to < lo:
		return fmt.Errorf("Auto Scaling Group %s: cannot decrease target size by %d to %d: below min size %d", g.name, -delta, to, lo)
	}
	return g.setDesired(ctx, from, to, "decrease target size")
}

func (g *nodeGroup) setDesired(ctx context.Context, from, to int, op string) error {
	ctx, cancel := g.cloud.opContext(ctx)
	defer cancel()
	_, err := g.cloud.api.AutoScaling.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{
		AutoScalingGroupName: aws.String(g.name),
		DesiredCapacity:      aws.Int32(int32(to)),
		HonorCooldown:        aws.Bool(false),
	})
	g.cloud.markDirty()
	if err != nil {
		return fmt.Errorf("Auto Scaling Group %s: %s: SetDesiredCapacity %d -> %d: %w", g.name, op, from, to, err)
	}
	g.cloud.logger().Info("Set desired capacity", "asg", g.name, "from", from, "to", to, "reason", op)
	g.cloud.mu.Lock()
	g.st.desired = to
	if to < from {
		// Requests cancelled: their launches are no longer awaited.
		g.cloud.stopWatchLocked(g.name)
	}
	g.cloud.mu.Unlock()
	return nil
}

// DeleteNodes terminates the nodes' instances with
// TerminateInstanceInAutoScalingGroup and ShouldDecrementDesiredCapacity,
// so the group does not replace them. Placeholders (instances not launched)
// are removed by lowering the desired capacity. It refuses nodes of other
// groups and going below the minimum size, before making any call.
func (g *nodeGroup) DeleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	g.cloud.mu.Lock()
	if err := g.checkActionableLocked("delete nodes"); err != nil {
		g.cloud.mu.Unlock()
		return err
	}
	byID := map[string]instance{}
	for _, in := range g.st.instances {
		byID[in.id] = in
	}
	var terminate []string
	placeholders := 0
	seen := map[string]bool{}
	for _, n := range nodes {
		_, id, err := ParseProviderID(n.Spec.ProviderID)
		if err != nil {
			g.cloud.mu.Unlock()
			return fmt.Errorf("Auto Scaling Group %s: delete node %s: %w", g.name, n.Name, err)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if asg, _, ok := parsePlaceholder(id); ok {
			if asg != g.name {
				g.cloud.mu.Unlock()
				return fmt.Errorf("Auto Scaling Group %s: node %s (providerID %q) is a placeholder of group %s", g.name, n.Name, n.Spec.ProviderID, asg)
			}
			placeholders++
			continue
		}
		in, ok := byID[id]
		if !ok {
			owner := g.cloud.byInstance[id]
			g.cloud.mu.Unlock()
			if owner != "" {
				return fmt.Errorf("Auto Scaling Group %s: node %s (instance %s) belongs to Auto Scaling Group %s", g.name, n.Name, id, owner)
			}
			return fmt.Errorf("Auto Scaling Group %s: node %s (instance %s) is not one of its instances", g.name, n.Name, id)
		}
		if !in.counts() {
			continue // already terminating
		}
		terminate = append(terminate, id)
	}
	from := g.st.desired
	lo, _ := g.boundsLocked()
	placeholders = min(placeholders, max(0, from-g.st.counted()))
	if to := from - placeholders - len(terminate); to < lo {
		g.cloud.mu.Unlock()
		return fmt.Errorf("Auto Scaling Group %s: deleting %d node(s) would leave %d, below min size %d", g.name, placeholders+len(terminate), to, lo)
	}
	g.cloud.mu.Unlock()

	if placeholders > 0 {
		if err := g.setDesired(ctx, from, from-placeholders, "delete unlaunched placeholder instances"); err != nil {
			return err
		}
	}
	for i, id := range terminate {
		if err := g.terminate(ctx, id); err != nil {
			if i > 0 {
				return fmt.Errorf("%w (%d of %d instance(s) were terminated before)", err, i, len(terminate))
			}
			return err
		}
	}
	return nil
}

func (g *nodeGroup) terminate(ctx context.Context, id string) error {
	ctx, cancel := g.cloud.opContext(ctx)
	defer cancel()
	out, err := g.cloud.api.AutoScaling.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId:                     aws.String(id),
		ShouldDecrementDesiredCapacity: aws.Bool(true),
	})
	g.cloud.markDirty()
	if err != nil {
		return fmt.Errorf("Auto Scaling Group %s: TerminateInstanceInAutoScalingGroup %s: %w", g.name, id, err)
	}
	activity := ""
	if out.Activity != nil {
		activity = aws.ToString(out.Activity.Description)
	}
	g.cloud.logger().Info("Terminating instance", "asg", g.name, "instance", id, "activity", activity)
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	g.st.desired--
	for i := range g.st.instances {
		if g.st.instances[i].id == id {
			g.st.instances[i].lifecycle = "Terminating"
		}
	}
	return nil
}

// Nodes lists the group's instances with their state, and a placeholder
// for every instance the group was asked for but has not launched. When
// the group's last launch failed, the placeholders carry that error.
func (g *nodeGroup) Nodes() ([]cloudprovider.Instance, error) {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	if g.st.gone {
		return nil, g.goneErr()
	}
	out := make([]cloudprovider.Instance, 0, max(len(g.st.instances), g.st.desired))
	for _, in := range g.st.instances {
		out = append(out, cloudprovider.Instance{Id: ProviderID(in.zone, in.id), Status: &cloudprovider.InstanceStatus{State: in.state()}})
	}
	counted := g.st.counted()
	zone := ""
	if len(g.st.zones) > 0 {
		zones := append([]string(nil), g.st.zones...)
		sort.Strings(zones)
		zone = zones[0]
	}
	for n := counted; n < g.st.desired; n++ {
		st := &cloudprovider.InstanceStatus{State: cloudprovider.InstanceCreating}
		if g.st.failure != nil {
			info := *g.st.failure
			st.ErrorInfo = &info
		}
		out = append(out, cloudprovider.Instance{Id: ProviderID(zone, placeholderID(g.name, n)), Status: st})
	}
	return out, nil
}

// TemplateNodeInfo is the node the group would launch next, for scale
// from zero.
func (g *nodeGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	g.cloud.mu.Lock()
	defer g.cloud.mu.Unlock()
	if g.st.template == nil {
		err := g.st.templateErr
		if err == nil {
			err = errors.New("no template built yet")
		}
		return nil, fmt.Errorf("Auto Scaling Group %s: template node: %w", g.name, err)
	}
	return &cloudprovider.NodeTemplate{Node: g.st.template.DeepCopy()}, nil
}

// GetOptions applies the group's
// k8s.io/cluster-autoscaler/node-template/autoscaling-options/<option> tags
// to defaults; ErrNotImplemented when it has none.
func (g *nodeGroup) GetOptions(defaults cloudprovider.NodeGroupAutoscalingOptions) (*cloudprovider.NodeGroupAutoscalingOptions, error) {
	g.cloud.mu.Lock()
	tags := g.st.tags
	g.cloud.mu.Unlock()
	opts, ok, _ := optionsFromTags(tags, defaults)
	if !ok {
		return nil, cloudprovider.ErrNotImplemented
	}
	return &opts, nil
}
