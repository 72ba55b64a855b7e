package aws

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// The real SDK's sqs client against the emulator: events are read, the
// ones dropped are deleted at once and counted, the others only when Done,
// and one not Done comes back after the visibility timeout.
func TestQueueReceivesDropsAndDeletesOnlyWhenDone(t *testing.T) {
	e := newEnv(t)
	e.srv.CreateQueue("interruptions")
	at := e.clock.Now()
	spot := e.srv.SpotInterruptionWarning("i-0123456789abcdef0", at)
	for _, body := range [][]byte{spot, []byte("not json"), []byte(`{"id":"x","detail-type":"EC2 Instance Launch Successful","source":"aws.autoscaling","time":"2026-03-01T12:00:00Z","detail":{}}`)} {
		if _, err := e.srv.SendMessage("interruptions", body); err != nil {
			t.Fatal(err)
		}
	}
	q, err := NewQueue(e.ctx, e.clients().SQS, "interruptions")
	if err != nil {
		t.Fatal(err)
	}
	r := startReader(t, e, q)
	got := r.next(1)
	in := got.Interruptions[0]
	if in.Kind != cloudprovider.SpotInterruption || len(in.Instances) != 1 || in.Instances[0] != "i-0123456789abcdef0" ||
		!in.Deadline.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("interruption %+v, want a spot interruption of i-0123456789abcdef0 due at %v", in, at.Add(2*time.Minute))
	}
	if got.Dropped["malformed"] != 1 || got.Dropped["unknown"] != 1 {
		t.Fatalf("dropped %v, want one malformed and one unknown\n%s", got.Dropped, e.log)
	}
	msgs, deleted := e.srv.Messages("interruptions")
	if len(msgs) != 1 || deleted != 2 || msgs[0].ID != in.ID {
		t.Fatalf("queue holds %+v (%d deleted), want the spot warning kept until acted on and the two others deleted", msgs, deleted)
	}
	// Not acted on: it comes back after the visibility timeout.
	e.clock.Step(QueueVisibility + time.Second)
	again := r.next(1)
	if again.Interruptions[0].ID != in.ID {
		t.Fatalf("received %+v again, want %s", again.Interruptions, in.ID)
	}
	if err := q.Done(e.ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if msgs, deleted := e.srv.Messages("interruptions"); len(msgs) != 0 || deleted != 3 {
		t.Fatalf("after Done the queue holds %+v (%d deleted), want it empty", msgs, deleted)
	}
	for _, r := range e.srv.RequestsOf("ReceiveMessage") {
		if !r.Signed || r.Service != "sqs" {
			t.Fatalf("ReceiveMessage not signed for sqs: %+v", r)
		}
	}
}

func TestQueueThatDoesNotExistStopsTidal(t *testing.T) {
	e := newEnv(t)
	_, err := NewQueue(e.ctx, e.clients().SQS, "missing")
	if err == nil || !strings.Contains(err.Error(), "--aws-interruption-queue=missing") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err %v, want one naming the flag and saying the queue does not exist", err)
	}
}

// reader runs a queue's Run until the test ends; next waits for n
// interruptions.
type reader struct {
	t        *testing.T
	e        *env
	q        *Queue
	notified chan struct{}
}

func startReader(t *testing.T, e *env, q *Queue) *reader {
	ctx, cancel := context.WithCancel(e.ctx)
	r := &reader{t: t, e: e, q: q, notified: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx, func() {
			select {
			case r.notified <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *reader) next(n int) cloudprovider.Received {
	r.t.Helper()
	var got cloudprovider.Received
	got.Dropped = map[string]int{}
	timeout := time.After(30 * time.Second)
	for len(got.Interruptions) < n {
		select {
		case <-r.notified:
		case <-timeout:
			r.t.Fatalf("%d interruption(s) received, want %d\n%s", len(got.Interruptions), n, r.e.log)
		}
		rec := r.q.Take()
		got.Interruptions = append(got.Interruptions, rec.Interruptions...)
		for k, v := range rec.Dropped {
			got.Dropped[k] += v
		}
	}
	return got
}
