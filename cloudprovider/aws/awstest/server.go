// Package awstest is an in-process emulator of the parts of EC2 Auto Scaling
// and EC2 that tidal uses, speaking their wire protocols (the AWS Query
// protocol and its EC2 dialect, XML responses, SigV4-signed requests), so
// that tests run the real aws-sdk-go-v2 clients against it.
//
// It keeps Auto Scaling Groups (desired capacity, instances with lifecycle
// states, tags, launch templates and configurations, scaling activities),
// launches instances after a delay, terminates them, and calls hooks when an
// instance reaches InService and when it is gone, so a test can create and
// delete the matching Node objects. Launch failures (a stock-out) and API
// errors (throttling, 5xx) can be injected; paginated operations honour a
// small page size so that pagination is exercised. Every request is
// recorded, and its signature is checked against the emulator's credentials.
package awstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"k8s.io/utils/clock"
)

// Default credentials and region of an emulator.
const (
	DefaultRegion          = "us-east-1"
	DefaultAccessKeyID     = "AKIDTIDALEMULATOR"
	DefaultSecretAccessKey = "tidal-emulator-secret-do-not-log"
	DefaultAccountID       = "123456789012"
)

const (
	autoscalingVersion = "2011-01-01"
	ec2Version         = "2016-11-15"
)

// Request is one API request the emulator received.
type Request struct {
	// Service is the signing name of the credential scope: autoscaling
	// or ec2.
	Service string
	Action  string
	// Params are the request parameters without Action and Version.
	Params url.Values
	Region string
	// AccessKeyID is the key the request was signed with.
	AccessKeyID string
	// Signed is true when the request carried a valid SigV4 signature
	// for the emulator's credentials.
	Signed    bool
	UserAgent string
	// Error is the error code returned, empty on success.
	Error string
	// Time is when the request came, on the emulator's clock.
	Time time.Time
}

// APIError is an error response the emulator can be told to return.
type APIError struct {
	HTTPStatus int
	Code       string
	Message    string
}

// Throttling is the error Auto Scaling returns when its rate limit is hit.
func Throttling() APIError {
	return APIError{HTTPStatus: http.StatusBadRequest, Code: "Throttling", Message: "Rate exceeded"}
}

// RequestLimitExceeded is EC2's throttling error.
func RequestLimitExceeded() APIError {
	return APIError{HTTPStatus: http.StatusServiceUnavailable, Code: "RequestLimitExceeded", Message: "Request limit exceeded."}
}

// ServiceUnavailable is a 5xx error.
func ServiceUnavailable() APIError {
	return APIError{HTTPStatus: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Message: "Service is unavailable. Please try again later."}
}

type requestFault struct {
	action string
	left   int
	err    APIError
}

// Hook is called with an instance when it changes state.
type Hook func(Instance)

// Server is the emulator. Its zero value is not usable: call New.
type Server struct {
	region         string
	accessKeyID    string
	secret         string
	clock          clock.WithTicker
	pageSize       int
	launchDelay    time.Duration
	terminateDelay time.Duration
	launchRetry    time.Duration
	failureDelay   time.Duration

	httpSrv *httptest.Server
	stop    chan struct{}
	done    chan struct{}

	// reconcileMu serialises reconciliations, so hooks run in order.
	reconcileMu sync.Mutex

	mu              sync.Mutex
	groups          map[string]*group
	launchTemplates map[string]*LaunchTemplate // by id
	launchConfigs   map[string]LaunchConfiguration
	instanceTypes   map[string]InstanceType
	spotPrices      []SpotPrice
	requests        []Request
	faults          []*requestFault
	queues          map[string]*sqsQueue
	// parameters are the SSM parameters, by name.
	parameters   map[string]string
	onInService  Hook
	onTerminated Hook
	seq          uint64
	idBase       uint64
	ltSeq        int
}

// Option configures a Server.
type Option func(*Server)

// WithRegion sets the region requests must be signed for.
func WithRegion(region string) Option { return func(s *Server) { s.region = region } }

// WithCredentials sets the credentials requests must be signed with.
func WithCredentials(accessKeyID, secret string) Option {
	return func(s *Server) { s.accessKeyID, s.secret = accessKeyID, secret }
}

// WithClock replaces the real clock. With a fake clock, call Reconcile
// after stepping it.
func WithClock(c clock.WithTicker) Option { return func(s *Server) { s.clock = c } }

// WithPageSize caps every paginated response at n items, so that clients
// have to follow NextToken.
func WithPageSize(n int) Option { return func(s *Server) { s.pageSize = n } }

// WithLaunchDelay sets how long an instance stays Pending before InService.
func WithLaunchDelay(d time.Duration) Option { return func(s *Server) { s.launchDelay = d } }

// WithTerminateDelay sets how long an instance stays Terminating.
func WithTerminateDelay(d time.Duration) Option { return func(s *Server) { s.terminateDelay = d } }

// WithLaunchRetry sets how often a group whose launches fail tries again
// (each try records a Failed activity).
func WithLaunchRetry(d time.Duration) Option { return func(s *Server) { s.launchRetry = d } }

// WithFailureDelay sets how long a launch that fails is in progress before
// its activity says Failed, as EC2 takes a while to try; 0 (the default)
// fails it at once.
func WithFailureDelay(d time.Duration) Option { return func(s *Server) { s.failureDelay = d } }

// WithInstanceTypes replaces the instance type catalog.
func WithInstanceTypes(types ...InstanceType) Option {
	return func(s *Server) {
		s.instanceTypes = map[string]InstanceType{}
		for _, t := range types {
			s.instanceTypes[t.Name] = t
		}
	}
}

// WithHooks sets the functions called when an instance reaches InService
// and when a terminated instance is gone. Either may be nil.
func WithHooks(inService, terminated Hook) Option {
	return func(s *Server) { s.onInService, s.onTerminated = inService, terminated }
}

// New starts an emulator on a loopback port; Close stops it.
func New(opts ...Option) *Server {
	s := &Server{
		region: DefaultRegion, accessKeyID: DefaultAccessKeyID, secret: DefaultSecretAccessKey,
		clock: clock.RealClock{}, launchDelay: time.Second, terminateDelay: 500 * time.Millisecond,
		launchRetry: 2 * time.Second,
		groups:      map[string]*group{}, launchTemplates: map[string]*LaunchTemplate{},
		launchConfigs: map[string]LaunchConfiguration{}, stop: make(chan struct{}), done: make(chan struct{}),
	}
	WithInstanceTypes(DefaultInstanceTypes()...)(s)
	for _, o := range opts {
		o(s)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	for _, c := range b {
		s.idBase = s.idBase<<8 | uint64(c)
	}
	s.httpSrv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	go s.run()
	return s
}

// URL is the endpoint to give the SDK clients as their BaseEndpoint (or as
// AWS_ENDPOINT_URL).
func (s *Server) URL() string { return s.httpSrv.URL }

// Region is the region requests must be signed for.
func (s *Server) Region() string { return s.region }

// Credentials are the access key id and secret requests must be signed with.
func (s *Server) Credentials() (accessKeyID, secret string) { return s.accessKeyID, s.secret }

// Close stops the emulator.
func (s *Server) Close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	<-s.done
	s.httpSrv.Close()
}

// SetHooks replaces the instance hooks.
func (s *Server) SetHooks(inService, terminated Hook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onInService, s.onTerminated = inService, terminated
}

func (s *Server) run() {
	defer close(s.done)
	ticker := s.clock.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C():
			s.Reconcile()
		}
	}
}

// AddLaunchTemplate stores a launch template and returns its id. Its
// default version is the first unless DefaultVersion says otherwise.
func (s *Server) AddLaunchTemplate(lt LaunchTemplate) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ltSeq++
	if lt.ID == "" {
		lt.ID = fmt.Sprintf("lt-%017x", s.idBase+uint64(s.ltSeq))
	}
	if lt.DefaultVersion == 0 {
		lt.DefaultVersion = 1
	}
	lt.Versions = append([]LaunchTemplateData(nil), lt.Versions...)
	s.launchTemplates[lt.ID] = &lt
	return lt.ID
}

// AddLaunchTemplateVersion adds a version to a launch template and returns
// its number.
func (s *Server) AddLaunchTemplateVersion(id string, data LaunchTemplateData) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt, ok := s.launchTemplates[id]
	if !ok {
		return 0, fmt.Errorf("no launch template %s", id)
	}
	lt.Versions = append(lt.Versions, data)
	return len(lt.Versions), nil
}

// AddLaunchConfiguration stores a launch configuration.
func (s *Server) AddLaunchConfiguration(lc LaunchConfiguration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launchConfigs[lc.Name] = lc
}

// AddGroup creates an Auto Scaling Group. Instances for its desired
// capacity are launched by the next reconciliation.
func (s *Server) AddGroup(spec GroupSpec) error {
	if spec.Name == "" || len(spec.AvailabilityZones) == 0 {
		return fmt.Errorf("group %q: a name and at least one availability zone are needed", spec.Name)
	}
	if spec.MinSize < 0 || spec.MinSize > spec.MaxSize || spec.DesiredCapacity < spec.MinSize || spec.DesiredCapacity > spec.MaxSize {
		return fmt.Errorf("group %s: want 0 <= min %d <= desired %d <= max %d", spec.Name, spec.MinSize, spec.DesiredCapacity, spec.MaxSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.groups[spec.Name]; exists {
		return fmt.Errorf("group %s exists", spec.Name)
	}
	spec.Tags = copyMap(spec.Tags)
	s.groups[spec.Name] = &group{spec: spec, created: s.clock.Now()}
	return nil
}

// DeleteGroup removes a group and forgets its instances at once.
func (s *Server) DeleteGroup(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.groups, name)
}

// Group returns a snapshot of a group.
func (s *Server) Group(name string) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return Group{}, false
	}
	return g.snapshot(), true
}

// SetDesiredCapacity changes a group's desired capacity, as someone
// outside tidal would.
func (s *Server) SetDesiredCapacity(name string, desired int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return fmt.Errorf("no group %s", name)
	}
	if desired < g.spec.MinSize || desired > g.spec.MaxSize {
		return fmt.Errorf("desired %d outside [%d, %d]", desired, g.spec.MinSize, g.spec.MaxSize)
	}
	g.spec.DesiredCapacity = desired
	return nil
}

// SetSizes changes a group's min and max sizes.
func (s *Server) SetSizes(name string, min, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return fmt.Errorf("no group %s", name)
	}
	g.spec.MinSize, g.spec.MaxSize = min, max
	return nil
}

// SetTag sets a tag of a group.
func (s *Server) SetTag(name, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return fmt.Errorf("no group %s", name)
	}
	if g.spec.Tags == nil {
		g.spec.Tags = map[string]string{}
	}
	g.spec.Tags[key] = value
	return nil
}

// SetLaunchFailure makes the group's launches fail until
// ClearLaunchFailure: each try records a Failed scaling activity.
func (s *Server) SetLaunchFailure(name string, f LaunchFailure) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return fmt.Errorf("no group %s", name)
	}
	g.failure = &f
	g.lastFailure = time.Time{}
	return nil
}

// ClearLaunchFailure lets the group's launches succeed again.
func (s *Server) ClearLaunchFailure(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[name]; ok {
		g.failure = nil
	}
}

// FailRequests makes the next n requests of action (any action when
// empty) fail with err.
func (s *Server) FailRequests(action string, n int, err APIError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &requestFault{action: action, left: n, err: err})
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsOf returns the requests of one action.
func (s *Server) RequestsOf(action string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// Reconcile moves every group towards its desired capacity once: it
// launches or terminates instances, finishes launches and terminations
// whose delay has passed, and calls the hooks. The emulator does this on
// its own every 20ms of its clock.
func (s *Server) Reconcile() {
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	now := s.clock.Now()
	var up, gone []Instance
	s.mu.Lock()
	for _, name := range sortedKeys(s.groups) {
		g := s.groups[name]
		u, d := s.reconcileGroupLocked(g, now)
		up, gone = append(up, u...), append(gone, d...)
	}
	inService, terminated := s.onInService, s.onTerminated
	s.mu.Unlock()
	for _, in := range up {
		if inService != nil {
			inService(in)
		}
	}
	for _, in := range gone {
		if terminated != nil {
			terminated(in)
		}
	}
}

func (s *Server) reconcileGroupLocked(g *group, now time.Time) (up, gone []Instance) {
	// Finish launches and terminations that are due.
	kept := g.instances[:0]
	for _, in := range g.instances {
		switch {
		case in.LifecycleState == StatePending && !now.Before(in.readyAt):
			in.LifecycleState = StateInService
			s.finishActivityLocked(g, in.ID, now)
			up = append(up, *in)
		case in.LifecycleState == StateTerminating && !now.Before(in.terminateAt):
			in.LifecycleState = StateTerminated
			s.finishActivityLocked(g, in.ID, now)
			gone = append(gone, *in)
			continue
		}
		kept = append(kept, in)
	}
	g.instances = kept

	active := g.active()
	switch missing := g.spec.DesiredCapacity - len(active); {
	case missing > 0 && g.failure != nil:
		if g.attempt == nil && (g.lastFailure.IsZero() || now.Sub(g.lastFailure) >= s.launchRetry) {
			a := &Activity{
				Description: "Launching a new EC2 instance",
				Cause: fmt.Sprintf("At %s an instance was started in response to a difference between desired and actual capacity, increasing the capacity from %d to %d.",
					now.UTC().Format(time.RFC3339), len(active), g.spec.DesiredCapacity),
				StartTime: now, StatusCode: ActivityInProgress, Progress: 20,
			}
			s.addActivityLocked(g, a)
			g.attempt = &failingAttempt{activity: a, failAt: now.Add(s.failureDelay), failure: *g.failure}
		}
	case missing > 0:
		for i := 0; i < missing; i++ {
			in := s.launchLocked(g, now)
			s.addActivityLocked(g, &Activity{
				Description: "Launching a new EC2 instance: " + in.ID,
				Cause: fmt.Sprintf("At %s an instance was started in response to a difference between desired and actual capacity, increasing the capacity from %d to %d.",
					now.UTC().Format(time.RFC3339), len(active)+i, g.spec.DesiredCapacity),
				StartTime: now, StatusCode: ActivityInProgress, Progress: 20, instanceID: in.ID,
			})
		}
	case missing < 0:
		// Terminate the newest instances first.
		for i := 0; i < -missing; i++ {
			victim := active[len(active)-1-i]
			s.terminateLocked(g, victim, now, "an instance was taken out of service in response to a difference between desired and actual capacity")
		}
	}
	if at := g.attempt; at != nil && !now.Before(at.failAt) {
		msg := at.failure.statusMessage()
		a := at.activity
		a.Description = "Launching a new EC2 instance.  Status Reason: " + msg
		a.StatusCode, a.StatusMessage, a.EndTime, a.Progress = ActivityFailed, msg, now, 100
		g.attempt, g.lastFailure = nil, now
	}
	return up, gone
}

func (s *Server) launchLocked(g *group, now time.Time) *Instance {
	s.seq++
	zones := g.spec.AvailabilityZones
	// Spread over the zones, as an ASG balances them.
	counts := map[string]int{}
	for _, in := range g.active() {
		counts[in.Zone]++
	}
	zone := zones[0]
	for _, z := range zones {
		if counts[z] < counts[zone] {
			zone = z
		}
	}
	n := s.idBase + s.seq
	in := &Instance{
		ID:                    fmt.Sprintf("i-%017x", n&0xfffffffffffffff),
		Group:                 g.spec.Name,
		Zone:                  zone,
		InstanceType:          s.instanceTypeLocked(g),
		LaunchTemplateVersion: s.launchedVersionLocked(g),
		ImageID:               s.imageLocked(g),
		PrivateDNSName:        fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", (n>>16)&0xff, (n>>8)&0xff, n&0xff),
		LifecycleState:        StatePending,
		HealthStatus:          "Healthy",
		LaunchTime:            now,
		readyAt:               now.Add(s.launchDelay),
	}
	g.instances = append(g.instances, in)
	return in
}

func (s *Server) terminateLocked(g *group, in *Instance, now time.Time, why string) *Activity {
	in.LifecycleState = StateTerminating
	in.terminateAt = now.Add(s.terminateDelay)
	a := &Activity{
		Description: "Terminating EC2 instance: " + in.ID,
		Cause:       fmt.Sprintf("At %s %s.", now.UTC().Format(time.RFC3339), why),
		StartTime:   now, StatusCode: ActivityInProgress, Progress: 0, instanceID: in.ID,
	}
	s.addActivityLocked(g, a)
	return a
}

// instanceTypeLocked is the type the group launches: the first override
// of a mixed instances policy, else its launch template's or launch
// configuration's.
func (s *Server) instanceTypeLocked(g *group) string {
	if p := g.spec.MixedInstancesPolicy; p != nil {
		for _, o := range p.Overrides {
			if o.InstanceType != "" {
				return o.InstanceType
			}
		}
		if d, err := s.launchTemplateDataLocked(p.LaunchTemplate); err == nil && d.InstanceType != "" {
			return d.InstanceType
		}
	}
	if g.spec.LaunchTemplate != nil {
		if d, err := s.launchTemplateDataLocked(*g.spec.LaunchTemplate); err == nil && d.InstanceType != "" {
			return d.InstanceType
		}
	}
	if lc, ok := s.launchConfigs[g.spec.LaunchConfigurationName]; ok {
		return lc.InstanceType
	}
	return "m5.large"
}

// launchedVersionLocked is the number of the launch template version the
// group launches now, "" without a launch template.
func (s *Server) launchedVersionLocked(g *group) string {
	ref := g.launchTemplate()
	if ref == nil {
		return ""
	}
	for _, lt := range s.launchTemplates {
		if lt.ID == ref.ID || ref.ID == "" && lt.Name == ref.Name {
			if v, err := lt.version(ref.Version); err == nil {
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

func (s *Server) launchTemplateDataLocked(ref LaunchTemplateRef) (LaunchTemplateData, error) {
	lt := s.launchTemplates[ref.ID]
	if lt == nil {
		for _, t := range s.launchTemplates {
			if ref.Name != "" && t.Name == ref.Name {
				lt = t
			}
		}
	}
	if lt == nil {
		return LaunchTemplateData{}, fmt.Errorf("no launch template %q", ref.ID+ref.Name)
	}
	v, err := lt.version(ref.Version)
	if err != nil {
		return LaunchTemplateData{}, err
	}
	return lt.Versions[v-1], nil
}

// version resolves "$Latest", "$Default", "" or a number.
func (lt *LaunchTemplate) version(v string) (int, error) {
	switch v {
	case "$Latest":
		return len(lt.Versions), nil
	case "", "$Default":
		return lt.DefaultVersion, nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 1 || n > len(lt.Versions) || fmt.Sprint(n) != v {
		return 0, fmt.Errorf("launch template %s has no version %q", lt.ID, v)
	}
	return n, nil
}

func (s *Server) addActivityLocked(g *group, a *Activity) {
	s.seq++
	a.ID = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(s.idBase), s.seq&0xffff, 0x4000|(s.seq>>16)&0xfff, 0x8000|s.seq&0xfff, s.idBase+s.seq)
	a.Group = g.spec.Name
	g.activities = append(g.activities, a)
}

func (s *Server) finishActivityLocked(g *group, instanceID string, now time.Time) {
	for i := len(g.activities) - 1; i >= 0; i-- {
		a := g.activities[i]
		if a.instanceID == instanceID && a.StatusCode == ActivityInProgress {
			a.StatusCode, a.EndTime, a.Progress = ActivitySuccessful, now, 100
			return
		}
	}
}

// serveHTTP checks the request's protocol and signature, records it and
// dispatches it to the action's handler.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.1") {
		s.serveSSM(w, r, body)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.0") {
		s.serveJSON(w, r, body)
		return
	}
	form, err := url.ParseQuery(string(body))
	if r.Method != http.MethodPost || err != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		writeQueryError(w, "", APIError{HTTPStatus: http.StatusBadRequest, Code: "MalformedQueryString", Message: "expected a form-encoded POST"})
		return
	}
	action := form.Get("Action")
	version := form.Get("Version")
	params := url.Values{}
	for k, v := range form {
		if k != "Action" && k != "Version" {
			params[k] = v
		}
	}
	req, scope, sigErr := s.received(r, body, action, params)

	h, wantService, wantVersion := s.handler(action)
	respond := func(e APIError) {
		req.Error = e.Code
		if wantService == "ec2" {
			writeEC2Error(w, e)
		} else {
			writeQueryError(w, wantService, e)
		}
	}
	defer s.record(req)
	switch {
	case h == nil:
		respond(APIError{HTTPStatus: http.StatusBadRequest, Code: "InvalidAction", Message: fmt.Sprintf("The action %s is not valid for this web service.", action)})
		return
	case sigErr != nil:
		respond(APIError{HTTPStatus: http.StatusForbidden, Code: "SignatureDoesNotMatch", Message: sigErr.Error()})
		return
	case scope.service != wantService:
		respond(APIError{HTTPStatus: http.StatusBadRequest, Code: "InvalidAction", Message: fmt.Sprintf("%s is an action of %s, but the request was signed for %s", action, wantService, scope.service)})
		return
	case scope.region != s.region:
		respond(APIError{HTTPStatus: http.StatusBadRequest, Code: "InvalidClientTokenId", Message: fmt.Sprintf("the request was signed for region %s, this endpoint is %s", scope.region, s.region)})
		return
	case version != wantVersion:
		respond(APIError{HTTPStatus: http.StatusBadRequest, Code: "InvalidParameterValue", Message: fmt.Sprintf("API version %q is not %s", version, wantVersion)})
		return
	}
	if e, failed := s.takeFault(action); failed {
		respond(e)
		return
	}
	if e := h(w, params); e != nil {
		respond(*e)
	}
}

type handlerFunc func(w http.ResponseWriter, params url.Values) *APIError

func (s *Server) handler(action string) (h handlerFunc, service, version string) {
	switch action {
	case "DescribeAutoScalingGroups":
		return s.describeAutoScalingGroups, "autoscaling", autoscalingVersion
	case "SetDesiredCapacity":
		return s.setDesiredCapacity, "autoscaling", autoscalingVersion
	case "TerminateInstanceInAutoScalingGroup":
		return s.terminateInstanceInAutoScalingGroup, "autoscaling", autoscalingVersion
	case "DescribeScalingActivities":
		return s.describeScalingActivities, "autoscaling", autoscalingVersion
	case "DescribeLaunchConfigurations":
		return s.describeLaunchConfigurations, "autoscaling", autoscalingVersion
	case "DescribeInstanceTypes":
		return s.describeInstanceTypes, "ec2", ec2Version
	case "DescribeLaunchTemplateVersions":
		return s.describeLaunchTemplateVersions, "ec2", ec2Version
	case "DescribeSpotPriceHistory":
		return s.describeSpotPriceHistory, "ec2", ec2Version
	case "DescribeInstances":
		return s.describeInstances, "ec2", ec2Version
	}
	return nil, "", ""
}

func (s *Server) takeFault(action string) (APIError, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.action != "" && f.action != action {
			continue
		}
		f.left--
		if f.left <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return f.err, true
	}
	return APIError{}, false
}

type credentialScope struct {
	accessKeyID, date, region, service string
}

// received starts the record of a request: what it asks and who signed it
// for which service and region (the error says why the signature is not
// valid).
func (s *Server) received(r *http.Request, body []byte, action string, params url.Values) (*Request, credentialScope, error) {
	req := &Request{Action: action, Params: params, UserAgent: r.Header.Get("User-Agent"), Time: s.clock.Now()}
	scope, sigErr := s.verifySignature(r, body)
	req.Service, req.Region, req.AccessKeyID, req.Signed = scope.service, scope.region, scope.accessKeyID, sigErr == nil
	return req, scope, sigErr
}

// record keeps a served request in the server's log, as it ended.
func (s *Server) record(req *Request) {
	s.mu.Lock()
	s.requests = append(s.requests, *req)
	s.mu.Unlock()
}

// verifySignature checks that the request carries a SigV4 Authorization
// header and that the signature is the one the emulator's credentials give.
func (s *Server) verifySignature(r *http.Request, body []byte) (credentialScope, error) {
	var scope credentialScope
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return scope, fmt.Errorf("no AWS4-HMAC-SHA256 Authorization header")
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[4] != "aws4_request" {
		return scope, fmt.Errorf("malformed credential scope %q", fields["Credential"])
	}
	scope = credentialScope{accessKeyID: cred[0], date: cred[1], region: cred[2], service: cred[3]}
	if scope.accessKeyID != s.accessKeyID {
		return scope, fmt.Errorf("the access key id is not the emulator's")
	}
	signingTime, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return scope, fmt.Errorf("no valid X-Amz-Date header")
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	clone, err := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return scope, err
	}
	clone.Host = r.Host
	clone.ContentLength = int64(len(body))
	for _, h := range signed {
		if h == "host" || h == "content-length" {
			continue
		}
		for _, v := range r.Header.Values(h) {
			clone.Header.Add(h, v)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: s.accessKeyID, SecretAccessKey: s.secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, clone, hex.EncodeToString(sum[:]), scope.service, scope.region, signingTime); err != nil {
		return scope, err
	}
	want := ""
	for _, part := range strings.Split(strings.TrimPrefix(clone.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Signature="); ok {
			want = v
		}
	}
	if want == "" || want != fields["Signature"] {
		return scope, fmt.Errorf("the request signature we calculated does not match the signature you provided")
	}
	return scope, nil
}

// launchTemplate is the launch template the group launches from, nil with
// a launch configuration.
func (g *group) launchTemplate() *LaunchTemplateRef {
	if p := g.spec.MixedInstancesPolicy; p != nil {
		return &p.LaunchTemplate
	}
	return g.spec.LaunchTemplate
}
