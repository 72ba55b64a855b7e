package aws

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/interruption"
)

// Receiving from the interruption queue.
const (
	// queueWait is the long poll of one ReceiveMessage, SQS's longest.
	queueWait = 20
	// QueueVisibility is how long a message received stays hidden: one
	// not deleted (not acted on: tidal stopped, or marking its node
	// failed) is received again after it, by this tidal or the next.
	QueueVisibility = 20 * time.Second
	// queueMaxBackoff bounds the wait after failed receives.
	queueMaxBackoff = 30 * time.Second
)

// Queue is the interruption queue: EventBridge events about EC2 instances
// in an SQS queue (--aws-interruption-queue). It receives in the
// background, reads each message (package interruption), deletes at once
// those it drops (counted by reason) and keeps the others, with their
// receipt handles, until the node loop says they were acted on.
type Queue struct {
	api  SQSAPI
	name string
	url  string

	mu      sync.Mutex
	pending []cloudprovider.Interruption
	dropped map[string]int
	// handles are the latest receipt handle of each message kept.
	handles map[string]string
}

var _ cloudprovider.InterruptionSource = (*Queue)(nil)

// NewQueue finds the queue by name; a queue that does not exist, or that
// tidal may not read, stops tidal at start.
func NewQueue(ctx context.Context, api SQSAPI, name string) (*Queue, error) {
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("--aws-interruption-queue=%s: %w", name, err)
	}
	return &Queue{api: api, name: name, url: aws.ToString(out.QueueUrl), dropped: map[string]int{}, handles: map[string]string{}}, nil
}

// Run receives until ctx ends. A failed receive is logged and tried again
// after a wait that doubles up to 30 s.
func (q *Queue) Run(ctx context.Context, notify func()) {
	logger := klog.FromContext(ctx).WithValues("queue", q.name)
	logger.Info("Reading interruption events")
	backoff := time.Second
	for ctx.Err() == nil {
		out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: queueWait, VisibilityTimeout: int32(QueueVisibility / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Could not receive interruption events; trying again", "in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, queueMaxBackoff)
			continue
		}
		backoff = time.Second
		if q.take(ctx, out.Messages) {
			notify()
		}
	}
}

// take reads the messages received; it reports whether any is kept or was
// dropped.
func (q *Queue) take(ctx context.Context, msgs []sqstypes.Message) bool {
	logger := klog.FromContext(ctx)
	for _, m := range msgs {
		id, handle := aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle)
		in, err := interruption.Parse([]byte(aws.ToString(m.Body)))
		if err != nil {
			reason := interruption.Reason(err)
			logger.Info("Dropping a message of the interruption queue", "queue", q.name, "messageID", id, "reason", reason, "err", err)
			q.mu.Lock()
			q.dropped[reason]++
			q.mu.Unlock()
			if err := q.delete(ctx, handle); err != nil {
				logger.Error(err, "Could not delete a dropped message; it comes back", "messageID", id)
			}
			continue
		}
		in.ID = id
		logger.V(2).Info("Interruption event received", "messageID", id, "kind", in.Kind, "instances", in.Instances,
			"deadline", in.Deadline, "receives", m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		q.mu.Lock()
		q.handles[id] = handle
		q.pending = append(q.pending, in)
		q.mu.Unlock()
	}
	return len(msgs) > 0
}

// Take returns what was received since the last Take.
func (q *Queue) Take() cloudprovider.Received {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := cloudprovider.Received{Interruptions: q.pending, Dropped: q.dropped}
	q.pending, q.dropped = nil, map[string]int{}
	return r
}

// Done deletes the message of an interruption acted on, by its latest
// receipt handle.
func (q *Queue) Done(ctx context.Context, id string) error {
	q.mu.Lock()
	handle, ok := q.handles[id]
	q.mu.Unlock()
	if !ok {
		return nil
	}
	if err := q.delete(ctx, handle); err != nil {
		return fmt.Errorf("delete message %s of queue %s: %w", id, q.name, err)
	}
	q.mu.Lock()
	if q.handles[id] == handle {
		delete(q.handles, id)
	}
	q.mu.Unlock()
	return nil
}

func (q *Queue) delete(ctx context.Context, handle string) error {
	_, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(handle)})
	return err
}
