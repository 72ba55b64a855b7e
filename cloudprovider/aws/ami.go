package aws

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
)

const (
	// idsPerDescribeInstances is how many instance ids one
	// DescribeInstances call carries.
	idsPerDescribeInstances = 100
	// ssmImagePrefix starts a launch template ImageId that EC2 resolves
	// from an SSM parameter at launch.
	ssmImagePrefix = "resolve:ssm:"
	// EventReasonImageUnknown: the AMI of instances or the one their
	// group launches could not be read; no node is marked drifted by AMI.
	EventReasonImageUnknown = "ImageDriftUnknown"
)

// parameterCache keeps SSM parameter values read for launch templates'
// resolve:ssm: image ids, each read again after ttl. Errors are not kept.
type parameterCache struct {
	ttl    time.Duration
	mu     sync.Mutex
	values map[string]parameterEntry
}

type parameterEntry struct {
	value   string
	fetched time.Time
}

func (c *parameterCache) get(ctx context.Context, api SSMAPI, name string, now time.Time) (string, error) {
	c.mu.Lock()
	e, ok := c.values[name]
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < c.ttl {
		return e.value, nil
	}
	if api == nil {
		return "", fmt.Errorf("SSM parameter %s: no SSM client", name)
	}
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("GetParameter %s: %w", name, err)
	}
	if out.Parameter == nil {
		return "", fmt.Errorf("GetParameter %s returned no parameter", name)
	}
	v := aws.ToString(out.Parameter.Value)
	c.mu.Lock()
	if c.values == nil {
		c.values = map[string]parameterEntry{}
	}
	c.values[name] = parameterEntry{value: v, fetched: now}
	c.mu.Unlock()
	return v, nil
}

// launchedImage is the AMI the group launches now: its launch template
// version's ImageId, an SSM parameter's value when that is
// resolve:ssm:<name>; "" without a launch template or image id.
func (c *Cloud) launchedImage(ctx context.Context, g *astypes.AutoScalingGroup, now time.Time) (string, error) {
	spec := groupLaunchTemplate(g)
	if spec == nil {
		return "", nil
	}
	k := keyOf(spec)
	data, err := c.lts.templateData(ctx, c.api.EC2, k, now)
	if err != nil {
		return "", err
	}
	image := aws.ToString(data.ImageId)
	if name, ok := strings.CutPrefix(image, ssmImagePrefix); ok {
		if image, err = c.params.get(ctx, c.api.SSM, name, now); err != nil {
			return "", fmt.Errorf("image of %s: %w", k, err)
		}
	}
	if image != "" && !strings.HasPrefix(image, "ami-") {
		return "", fmt.Errorf("image of %s is %.80q, not an AMI id", k, image)
	}
	return image, nil
}

// instanceImages is the AMI of instances. An instance's AMI never
// changes: only instances not read before are read, 100 ids per
// DescribeInstances call, following NextToken; instances no longer asked
// for are forgotten. Called under refreshMu.
func (c *Cloud) instanceImages(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	var unread []string
	for _, id := range ids {
		if ami, ok := c.images[id]; ok {
			out[id] = ami
		} else {
			unread = append(unread, id)
		}
	}
	for start := 0; start < len(unread); start += idsPerDescribeInstances {
		batch := unread[start:min(start+idsPerDescribeInstances, len(unread))]
		pages := ec2.NewDescribeInstancesPaginator(c.api.EC2, &ec2.DescribeInstancesInput{InstanceIds: batch})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("DescribeInstances of %d instances: %w", len(batch), err)
			}
			for _, r := range page.Reservations {
				for _, in := range r.Instances {
					if ami := aws.ToString(in.ImageId); strings.HasPrefix(ami, "ami-") {
						out[aws.ToString(in.InstanceId)] = ami
					}
				}
			}
		}
	}
	c.images = out
	return out, nil
}

// addImageDrift reads the AMIs of the InService instances of the groups
// and the AMIs their groups launch, and adds to each group's drift the
// instances whose AMI differs. A group whose AMI cannot be read, or all
// of them when the instances' cannot, get no AMI drift; the first error
// is returned.
func (c *Cloud) addImageDrift(ctx context.Context, results map[string]*described, now time.Time) error {
	var ids []string
	for _, name := range sortedKeys(results) {
		for _, in := range results[name].asg.Instances {
			if in.LifecycleState == astypes.LifecycleStateInService {
				ids = append(ids, aws.ToString(in.InstanceId))
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	have, err := c.instanceImages(ctx, ids)
	if err != nil {
		return err
	}
	var first error
	for _, name := range sortedKeys(results) {
		d := results[name]
		if d.specErr != nil {
			continue
		}
		want, err := c.launchedImage(ctx, &d.asg, now)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("Auto Scaling Group %s: %w", name, err)
			}
			continue
		}
		for id, why := range imageDrift(&d.asg, have, want) {
			if d.drift == nil {
				d.drift = map[string]string{}
			}
			if d.drift[id] == "" {
				d.drift[id] = why
			}
		}
	}
	return first
}

// reportImageDrift logs and reports, once per distinct error, that AMI
// drift could not be worked out; a success after a failure is logged too.
func (c *Cloud) reportImageDrift(err error) {
	key := ""
	if err != nil {
		key = errorKey(err)
	}
	if key == c.imageErr {
		return
	}
	c.imageErr = key
	if err == nil {
		c.logger().Info("The AMIs of instances and groups can be read again; comparing them")
		return
	}
	c.logger().Error(err, "Could not read AMIs; no node is marked drifted by its AMI until they can be read")
	c.events(corev1.EventTypeWarning, EventReasonImageUnknown, fmt.Sprintf("No node is marked drifted by its AMI: %v", err))
}
