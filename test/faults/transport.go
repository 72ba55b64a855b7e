// Package faults injects failures into tidal as tests run it: an
// http.RoundTripper for its API server clients (server errors, throttling,
// timeouts, lost responses, update conflicts, dropped and expired watches)
// and a wrapper of its cloud provider (failed and slow calls). Faults are
// drawn from a seeded source at set rates, counted by kind, and can be
// switched off, so a test can check that tidal stays safe while they last
// and converges once they stop.
package faults

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is a fault of the API server's.
type Kind string

const (
	// InternalError: HTTP 500, as when a storage call fails.
	InternalError Kind = "500"
	// Unavailable: HTTP 503, as when etcd has no leader.
	Unavailable Kind = "503"
	// TooManyRequests: HTTP 429 with Retry-After, as API priority and
	// fairness answers (client-go waits and retries it).
	TooManyRequests Kind = "429"
	// Timeout: the request never reaches the server; the client sees a
	// timeout after a while.
	Timeout Kind = "timeout"
	// LostResponse: the server carries the request out, the client sees a
	// timeout (not for watches).
	LostResponse Kind = "lost-response"
	// Conflict: HTTP 409 to an update (PUT or PATCH), as when another
	// writer got there first.
	Conflict Kind = "409"
	// DroppedWatch: a watch stream is cut after a short while.
	DroppedWatch Kind = "dropped-watch"
	// ExpiredWatch: HTTP 410 to a watch, as when its resource version is
	// too old: the informer lists again.
	ExpiredWatch Kind = "410-watch"
)

// AllKinds are every kind of API fault.
var AllKinds = []Kind{InternalError, Unavailable, TooManyRequests, Timeout, LostResponse, Conflict, DroppedWatch, ExpiredWatch}

// Rule faults the requests it matches at a rate, with a kind drawn among
// those that apply to the request (Conflict to updates, DroppedWatch and
// ExpiredWatch to watches, LostResponse to anything but watches).
type Rule struct {
	// Match selects requests by their method, URL and body; nil matches
	// all.
	Match func(req *http.Request, body []byte) bool
	Rate  float64
	Kinds []Kind
}

// Transport injects API faults into every client whose transport it wraps
// (see Wrap), from one seeded source, under the first rule that matches.
type Transport struct {
	rules []Rule
	// hold is how long a Timeout or LostResponse keeps the client waiting.
	hold time.Duration

	mu       sync.Mutex
	rng      *rand.Rand
	on       bool
	requests int
	counts   map[Kind]int
	observe  []func(*http.Request, []byte)
}

// New makes a transport that injects faults by rules, seeded with seed. It
// starts switched on.
func New(seed uint64, rules ...Rule) *Transport {
	return &Transport{rules: rules, hold: time.Second, rng: rand.New(rand.NewPCG(seed, 0x6661756c74)), on: true, counts: map[Kind]int{}}
}

// Wrap wraps a client's transport; it is a transport.WrapperFunc for
// rest.Config.Wrap. Every wrapped client shares the transport's source,
// switch and counts.
func (t *Transport) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{t: t, next: rt}
}

// SetEnabled switches faults on or off.
func (t *Transport) SetEnabled(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = on
}

// Observe calls f with every request (and its body) before it is faulted or
// sent; f may block to hold the request.
func (t *Transport) Observe(f func(req *http.Request, body []byte)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe = append(t.observe, f)
}

// Counts are the faults injected so far, by kind, and the requests seen.
func (t *Transport) Counts() (faults map[Kind]int, requests int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[Kind]int, len(t.counts))
	for k, v := range t.counts {
		out[k] = v
	}
	return out, t.requests
}

// String sums the faults up: "1234 requests: 500×12 503×10 ...".
func (t *Transport) String() string {
	counts, requests := t.Counts()
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests:", requests)
	for _, k := range AllKinds {
		if counts[k] > 0 {
			fmt.Fprintf(&b, " %s×%d", k, counts[k])
		}
	}
	return b.String()
}

// draw picks the fault for a request, or "".
func (t *Transport) draw(req *http.Request, body []byte) (Kind, []func(*http.Request, []byte)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	observe := t.observe
	if !t.on {
		return "", observe
	}
	for _, r := range t.rules {
		if r.Match != nil && !r.Match(req, body) {
			continue
		}
		kinds := applicable(req, r.Kinds)
		if len(kinds) == 0 || t.rng.Float64() >= r.Rate {
			return "", observe
		}
		k := kinds[t.rng.IntN(len(kinds))]
		t.counts[k]++
		return k, observe
	}
	return "", observe
}

func applicable(req *http.Request, kinds []Kind) []Kind {
	watch, update := IsWatch(req), req.Method == http.MethodPut || req.Method == http.MethodPatch
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		switch {
		case k == Conflict && !update, (k == DroppedWatch || k == ExpiredWatch) && !watch, k == LostResponse && watch:
			continue
		}
		out = append(out, k)
	}
	return out
}

// IsWatch reports whether req opens a watch.
func IsWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

type roundTripper struct {
	t    *Transport
	next http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	kind, observe := rt.t.draw(req, body)
	for _, f := range observe {
		f(req, body)
	}
	switch kind {
	case "":
		return rt.next.RoundTrip(req)
	case Timeout:
		return nil, rt.t.wait(req)
	case LostResponse:
		resp, err := rt.next.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, rt.t.wait(req)
	case DroppedWatch:
		resp, err := rt.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		resp.Body = newCutBody(resp.Body, rt.t.cutAfter())
		return resp, nil
	}
	return statusResponse(req, kind), nil
}

// wait holds a request as a slow server would, then fails it as a client
// timeout does.
func (t *Transport) wait(req *http.Request) error {
	select {
	case <-req.Context().Done():
		return req.Context().Err()
	case <-time.After(t.hold):
	}
	return timeoutError{url: req.URL.Path}
}

func (t *Transport) cutAfter() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Duration(t.rng.Int64N(int64(2 * time.Second)))
}

type timeoutError struct{ url string }

func (e timeoutError) Error() string {
	return "net/http: timeout awaiting response headers (injected fault on " + e.url + ")"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// readBody reads a request's body and puts it back.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("faults: read request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// cutBody ends a watch stream, as a dropped connection does, once its time
// has come.
type cutBody struct {
	io.ReadCloser
	timer *time.Timer
	cut   atomic.Bool
}

func newCutBody(rc io.ReadCloser, after time.Duration) *cutBody {
	b := &cutBody{ReadCloser: rc}
	b.timer = time.AfterFunc(after, func() {
		b.cut.Store(true)
		rc.Close()
	})
	return b
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return 0, io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *cutBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}
