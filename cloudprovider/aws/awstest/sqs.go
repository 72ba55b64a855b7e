package awstest

// Amazon SQS, as the SDK's sqs client speaks it: the AWS JSON 1.0
// protocol (POST /, Content-Type application/x-amz-json-1.0, the operation
// in X-Amz-Target as AmazonSQS.<Operation>, errors as {"__type", "message"}
// with the x-amzn-query-error header), SigV4-signed for the service sqs.
// Queues hold messages with a visibility timeout: a message received is
// invisible until it times out (then it is received again, with another
// receipt handle) or is deleted by its latest receipt handle.

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	sqsTargetPrefix = "AmazonSQS."
	// sqsDefaultVisibility is a queue's default visibility timeout.
	sqsDefaultVisibility = 30 * time.Second
	// sqsMaxWait is the longest long poll SQS allows.
	sqsMaxWait = 20 * time.Second
)

type sqsQueue struct {
	name     string
	messages []*sqsMessage
	// deleted counts the messages deleted.
	deleted int
}

type sqsMessage struct {
	id, body      string
	handle        string
	sent          time.Time
	invisibleTill time.Time
	receives      int
}

// Message is a message in a queue, as a test sees it.
type Message struct {
	ID, Body string
	// Receives is how many times it was received; Visible whether a
	// receive would return it now.
	Receives int
	Visible  bool
}

// CreateQueue makes an SQS queue; its URL is returned.
func (s *Server) CreateQueue(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues == nil {
		s.queues = map[string]*sqsQueue{}
	}
	if _, ok := s.queues[name]; !ok {
		s.queues[name] = &sqsQueue{name: name}
	}
	return s.queueURL(name)
}

func (s *Server) queueURL(name string) string {
	return s.httpSrv.URL + "/" + DefaultAccountID + "/" + name
}

// SendMessage puts a message in a queue, as EventBridge would, and returns
// its id.
func (s *Server) SendMessage(queue string, body []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return "", fmt.Errorf("no queue %s", queue)
	}
	return s.sendLocked(q, string(body)), nil
}

func (s *Server) sendLocked(q *sqsQueue, body string) string {
	s.seq++
	id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(s.idBase), s.seq&0xffff, s.seq&0xfff, (s.seq>>12)&0xfff, s.idBase+s.seq)
	q.messages = append(q.messages, &sqsMessage{id: id, body: body, sent: s.clock.Now()})
	return id
}

// Messages lists the messages of a queue not deleted, oldest first, and
// how many were deleted.
func (s *Server) Messages(queue string) (msgs []Message, deleted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return nil, 0
	}
	now := s.clock.Now()
	for _, m := range q.messages {
		msgs = append(msgs, Message{ID: m.id, Body: m.body, Receives: m.receives, Visible: !now.Before(m.invisibleTill)})
	}
	return msgs, q.deleted
}

// serveJSON serves a request of the AWS JSON 1.0 protocol.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, body []byte) {
	op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), sqsTargetPrefix)
	req, scope, sigErr := s.received(r, body, op, url.Values{})
	defer s.record(req)
	respond := func(e sqsError) {
		req.Error = e.code
		writeJSONError(w, e)
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		respond(sqsError{http.StatusBadRequest, "InvalidParameterValue", "AWS.SimpleQueueService.InvalidParameterValue", "the body is not JSON: " + err.Error()})
		return
	}
	for _, k := range []string{"QueueUrl", "QueueName", "ReceiptHandle"} {
		if v, ok := in[k].(string); ok {
			req.Params.Set(k, v)
		}
	}
	h := s.sqsHandler(op)
	switch {
	case h == nil:
		respond(sqsError{http.StatusBadRequest, "UnknownOperationException", "", "unknown operation " + r.Header.Get("X-Amz-Target")})
		return
	case sigErr != nil:
		respond(sqsError{http.StatusForbidden, "SignatureDoesNotMatch", "", sigErr.Error()})
		return
	case scope.service != "sqs":
		respond(sqsError{http.StatusBadRequest, "InvalidAction", "", op + " is an action of sqs, but the request was signed for " + scope.service})
		return
	case scope.region != s.region:
		respond(sqsError{http.StatusBadRequest, "InvalidClientTokenId", "", "the request was signed for region " + scope.region})
		return
	}
	if e, failed := s.takeFault(op); failed {
		respond(sqsError{e.HTTPStatus, e.Code, "", e.Message})
		return
	}
	out, e := h(r, in)
	if e != nil {
		respond(*e)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", requestID())
	_ = json.NewEncoder(w).Encode(out)
}

type sqsError struct {
	status     int
	code       string
	queryError string
	message    string
}

func writeJSONError(w http.ResponseWriter, e sqsError) {
	if e.queryError != "" {
		typ := "Sender"
		if e.status >= 500 {
			typ = "Receiver"
		}
		w.Header().Set("x-amzn-query-error", e.queryError+";"+typ)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", requestID())
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + e.code, "message": e.message})
}

type sqsHandlerFunc func(r *http.Request, in map[string]any) (any, *sqsError)

func (s *Server) sqsHandler(op string) sqsHandlerFunc {
	switch op {
	case "GetQueueUrl":
		return s.getQueueURL
	case "ReceiveMessage":
		return s.receiveMessage
	case "DeleteMessage":
		return s.deleteMessage
	case "SendMessage":
		return s.sendMessage
	}
	return nil
}

func noQueue() *sqsError {
	return &sqsError{http.StatusBadRequest, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist."}
}

func invalid(format string, args ...any) *sqsError {
	return &sqsError{http.StatusBadRequest, "InvalidParameterValue", "AWS.SimpleQueueService.InvalidParameterValue", fmt.Sprintf(format, args...)}
}

func (s *Server) getQueueURL(_ *http.Request, in map[string]any) (any, *sqsError) {
	name, _ := in["QueueName"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		return nil, noQueue()
	}
	return map[string]string{"QueueUrl": s.queueURL(name)}, nil
}

// queueLocked finds the queue a QueueUrl names.
func (s *Server) queueLocked(in map[string]any) (*sqsQueue, *sqsError) {
	u, _ := in["QueueUrl"].(string)
	i := strings.LastIndex(u, "/")
	if i < 0 {
		return nil, invalid("QueueUrl %q is not a queue URL", u)
	}
	q, ok := s.queues[u[i+1:]]
	if !ok || s.queueURL(q.name) != u {
		return nil, noQueue()
	}
	return q, nil
}

func intParam(in map[string]any, key string, def, lo, hi int) (int, *sqsError) {
	v, ok := in[key]
	if !ok {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) || int(f) < lo || int(f) > hi {
		return 0, invalid("%s must be an integer from %d to %d, got %v", key, lo, hi, v)
	}
	return int(f), nil
}

// receiveMessage returns up to MaxNumberOfMessages visible messages,
// waiting up to WaitTimeSeconds (a long poll) for one to be there.
func (s *Server) receiveMessage(r *http.Request, in map[string]any) (any, *sqsError) {
	most, e := intParam(in, "MaxNumberOfMessages", 1, 1, 10)
	if e != nil {
		return nil, e
	}
	wait, e := intParam(in, "WaitTimeSeconds", 0, 0, int(sqsMaxWait/time.Second))
	if e != nil {
		return nil, e
	}
	visibility, e := intParam(in, "VisibilityTimeout", int(sqsDefaultVisibility/time.Second), 0, 43200)
	if e != nil {
		return nil, e
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		if r.Context().Err() != nil {
			return nil, nil
		}
		msgs, e := s.takeVisible(in, most, time.Duration(visibility)*time.Second)
		if e != nil || len(msgs) > 0 || !time.Now().Before(deadline) {
			return map[string]any{"Messages": msgs}, e
		}
		select {
		case <-r.Context().Done():
			return map[string]any{"Messages": msgs}, nil
		case <-s.stop:
			return map[string]any{"Messages": msgs}, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) takeVisible(in map[string]any, most int, visibility time.Duration) ([]map[string]any, *sqsError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.queueLocked(in)
	if e != nil {
		return nil, e
	}
	now := s.clock.Now()
	var out []map[string]any
	for _, m := range q.messages {
		if len(out) == most {
			break
		}
		if now.Before(m.invisibleTill) {
			continue
		}
		s.seq++
		m.receives++
		m.invisibleTill = now.Add(visibility)
		m.handle = fmt.Sprintf("%s#%d#%x", m.id, m.receives, s.idBase+s.seq)
		sum := md5.Sum([]byte(m.body))
		out = append(out, map[string]any{"MessageId": m.id, "ReceiptHandle": m.handle, "MD5OfBody": hex.EncodeToString(sum[:]),
			"Body": m.body, "Attributes": map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives),
				"SentTimestamp": strconv.FormatInt(m.sent.UnixMilli(), 10)}})
	}
	return out, nil
}

// deleteMessage deletes the message its latest receipt handle names; an
// outdated handle of a message received again is ignored, as SQS may.
func (s *Server) deleteMessage(_ *http.Request, in map[string]any) (any, *sqsError) {
	handle, _ := in["ReceiptHandle"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.queueLocked(in)
	if e != nil {
		return nil, e
	}
	id, _, ok := strings.Cut(handle, "#")
	if !ok {
		return nil, &sqsError{http.StatusBadRequest, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", "The input receipt handle is invalid."}
	}
	for i, m := range q.messages {
		if m.id == id {
			if m.handle == handle {
				q.messages = append(q.messages[:i], q.messages[i+1:]...)
				q.deleted++
			}
			break
		}
	}
	return map[string]any{}, nil
}

func (s *Server) sendMessage(_ *http.Request, in map[string]any) (any, *sqsError) {
	body, _ := in["MessageBody"].(string)
	if body == "" {
		return nil, invalid("MessageBody is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.queueLocked(in)
	if e != nil {
		return nil, e
	}
	id := s.sendLocked(q, body)
	sum := md5.Sum([]byte(body))
	return map[string]string{"MessageId": id, "MD5OfMessageBody": hex.EncodeToString(sum[:])}, nil
}
