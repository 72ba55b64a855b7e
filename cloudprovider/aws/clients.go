package aws

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/klog/v2"
)

// AutoScalingAPI is the part of the Auto Scaling client the provider uses.
type AutoScalingAPI interface {
	autoscaling.DescribeAutoScalingGroupsAPIClient
	autoscaling.DescribeScalingActivitiesAPIClient
	autoscaling.DescribeLaunchConfigurationsAPIClient
	SetDesiredCapacity(ctx context.Context, in *autoscaling.SetDesiredCapacityInput, optFns ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error)
	TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, optFns ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
}

// EC2API is the part of the EC2 client the provider uses.
type EC2API interface {
	ec2.DescribeInstanceTypesAPIClient
	ec2.DescribeLaunchTemplateVersionsAPIClient
	ec2.DescribeSpotPriceHistoryAPIClient
	ec2.DescribeInstancesAPIClient
}

// SSMAPI is the part of the SSM client that resolves launch templates'
// resolve:ssm: image ids.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// SQSAPI is the part of the SQS client the interruption queue uses.
type SQSAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// Clients are the AWS API clients of a Cloud and the region they talk to.
type Clients struct {
	AutoScaling AutoScalingAPI
	EC2         EC2API
	// SQS reads the interruption queue (--aws-interruption-queue).
	SQS SQSAPI
	// SSM reads the parameters of resolve:ssm: image ids.
	SSM    SSMAPI
	Region string
}

// ClientOptions configure NewClients.
type ClientOptions struct {
	// Region overrides the region of the SDK's chain (AWS_REGION, the
	// shared config file, the instance metadata).
	Region string
	// Endpoint replaces the services' endpoint (BaseEndpoint), for tests
	// and private endpoints. Empty keeps the SDK's resolution, which also
	// honours AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>.
	Endpoint string
	// MaxAttempts bounds the attempts of one call, retries included;
	// 0 means 5.
	MaxAttempts int
	// MaxBackoff bounds the wait between attempts; 0 means the SDK's 20s.
	MaxBackoff time.Duration
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient aws.HTTPClient
	// LoadOptions are passed to config.LoadDefaultConfig after the
	// options above, e.g. to give static credentials in tests.
	LoadOptions []func(*awsconfig.LoadOptions) error
}

// DefaultMaxAttempts is how many times a call is tried before its error is
// returned: throttling and 5xx errors are retried with backoff, and the
// adaptive retryer slows all calls down while AWS throttles.
const DefaultMaxAttempts = 5

// imdsRegionTimeout bounds the lookup of the region in the instance
// metadata when neither the flag nor the SDK's configuration gives one.
const imdsRegionTimeout = 5 * time.Second

// NewClients loads the SDK's default configuration and makes the clients.
// Credentials come from the SDK's default chain: environment variables,
// the shared config and credentials files (profiles, SSO, assume-role),
// web identity tokens (IRSA), container credentials (EKS Pod Identity,
// ECS) and the instance metadata service (IMDSv2). The region comes from
// o.Region, else the SDK's chain (AWS_REGION, the shared config), else the
// instance metadata. Retries use the SDK's
// retryer in adaptive mode. Credentials are never logged.
func NewClients(ctx context.Context, o ClientOptions) (Clients, error) {
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	load := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithAppID("tidal"),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
				ao.StandardOptions = append(ao.StandardOptions, func(so *retry.StandardOptions) {
					so.MaxAttempts = attempts
					if o.MaxBackoff > 0 {
						so.MaxBackoff = o.MaxBackoff
					}
				})
			})
		}),
	}
	if o.Region != "" {
		load = append(load, awsconfig.WithRegion(o.Region))
	}
	if o.HTTPClient != nil {
		load = append(load, awsconfig.WithHTTPClient(o.HTTPClient))
	}
	load = append(load, o.LoadOptions...)
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return Clients{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		// Last in the chain: the region of the instance tidal runs on.
		imdsCtx, cancel := context.WithTimeout(ctx, imdsRegionTimeout)
		out, err := imds.NewFromConfig(cfg).GetRegion(imdsCtx, &imds.GetRegionInput{})
		cancel()
		if err != nil {
			return Clients{}, fmt.Errorf("no AWS region: give --aws-region or set AWS_REGION (the instance metadata service could not tell it: %w)", err)
		}
		cfg.Region = out.Region
	}
	endpoint := o.Endpoint
	asc := autoscaling.NewFromConfig(cfg, func(ao *autoscaling.Options) {
		if endpoint != "" {
			ao.BaseEndpoint = aws.String(endpoint)
		}
	})
	ec2c := ec2.NewFromConfig(cfg, func(eo *ec2.Options) {
		if endpoint != "" {
			eo.BaseEndpoint = aws.String(endpoint)
		}
	})
	sqsc := sqs.NewFromConfig(cfg, func(so *sqs.Options) {
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
		}
	})
	ssmc := ssm.NewFromConfig(cfg, func(so *ssm.Options) {
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
		}
	})
	klog.FromContext(ctx).Info("AWS clients ready", "region", cfg.Region, "maxAttempts", attempts, "retryMode", "adaptive",
		"customEndpoint", endpoint != "" || cfg.BaseEndpoint != nil)
	return Clients{AutoScaling: asc, EC2: ec2c, SQS: sqsc, SSM: ssmc, Region: cfg.Region}, nil
}
