package awstest

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const autoscalingNamespace = "http://autoscaling.amazonaws.com/doc/2011-01-01/"

// XML shapes of the Auto Scaling responses (awsQuery: lists are <member>).

type xmlLaunchTemplateSpec struct {
	LaunchTemplateID   string `xml:"LaunchTemplateId,omitempty"`
	LaunchTemplateName string `xml:"LaunchTemplateName,omitempty"`
	Version            string `xml:"Version,omitempty"`
}

type xmlRange struct {
	Min int `xml:"Min"`
	Max int `xml:"Max,omitempty"`
}

type xmlASGRequirements struct {
	VCPUCount xmlRange `xml:"VCpuCount"`
	MemoryMiB xmlRange `xml:"MemoryMiB"`
}

type xmlOverride struct {
	InstanceType         string              `xml:"InstanceType,omitempty"`
	InstanceRequirements *xmlASGRequirements `xml:"InstanceRequirements,omitempty"`
}

type xmlMixedInstancesPolicy struct {
	LaunchTemplateSpecification xmlLaunchTemplateSpec `xml:"LaunchTemplate>LaunchTemplateSpecification"`
	Overrides                   []xmlOverride         `xml:"LaunchTemplate>Overrides>member"`
	OnDemandAllocationStrategy  string                `xml:"InstancesDistribution>OnDemandAllocationStrategy"`
	OnDemandBaseCapacity        int                   `xml:"InstancesDistribution>OnDemandBaseCapacity"`
	OnDemandPercentage          int                   `xml:"InstancesDistribution>OnDemandPercentageAboveBaseCapacity"`
	SpotAllocationStrategy      string                `xml:"InstancesDistribution>SpotAllocationStrategy"`
}

type xmlInstance struct {
	InstanceID           string                 `xml:"InstanceId"`
	InstanceType         string                 `xml:"InstanceType"`
	AvailabilityZone     string                 `xml:"AvailabilityZone"`
	LifecycleState       string                 `xml:"LifecycleState"`
	HealthStatus         string                 `xml:"HealthStatus"`
	LaunchTemplate       *xmlLaunchTemplateSpec `xml:"LaunchTemplate,omitempty"`
	ProtectedFromScaleIn bool                   `xml:"ProtectedFromScaleIn"`
}

type xmlTag struct {
	ResourceID        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

type xmlGroup struct {
	AutoScalingGroupName    string                   `xml:"AutoScalingGroupName"`
	AutoScalingGroupARN     string                   `xml:"AutoScalingGroupARN"`
	LaunchConfigurationName string                   `xml:"LaunchConfigurationName,omitempty"`
	LaunchTemplate          *xmlLaunchTemplateSpec   `xml:"LaunchTemplate,omitempty"`
	MixedInstancesPolicy    *xmlMixedInstancesPolicy `xml:"MixedInstancesPolicy,omitempty"`
	MinSize                 int                      `xml:"MinSize"`
	MaxSize                 int                      `xml:"MaxSize"`
	DesiredCapacity         int                      `xml:"DesiredCapacity"`
	DefaultCooldown         int                      `xml:"DefaultCooldown"`
	AvailabilityZones       []string                 `xml:"AvailabilityZones>member"`
	VPCZoneIdentifier       string                   `xml:"VPCZoneIdentifier,omitempty"`
	HealthCheckType         string                   `xml:"HealthCheckType"`
	HealthCheckGracePeriod  int                      `xml:"HealthCheckGracePeriod"`
	CreatedTime             string                   `xml:"CreatedTime"`
	Instances               []xmlInstance            `xml:"Instances>member"`
	Tags                    []xmlTag                 `xml:"Tags>member"`
	TerminationPolicies     []string                 `xml:"TerminationPolicies>member"`
	ServiceLinkedRoleARN    string                   `xml:"ServiceLinkedRoleARN"`
}

type xmlActivity struct {
	ActivityID           string `xml:"ActivityId"`
	AutoScalingGroupName string `xml:"AutoScalingGroupName"`
	AutoScalingGroupARN  string `xml:"AutoScalingGroupARN"`
	Description          string `xml:"Description"`
	Cause                string `xml:"Cause"`
	StartTime            string `xml:"StartTime"`
	EndTime              string `xml:"EndTime,omitempty"`
	StatusCode           string `xml:"StatusCode"`
	StatusMessage        string `xml:"StatusMessage,omitempty"`
	Progress             int    `xml:"Progress"`
	Details              string `xml:"Details"`
}

type xmlBlockDevice struct {
	DeviceName string `xml:"DeviceName"`
	VolumeSize int    `xml:"Ebs>VolumeSize"`
	VolumeType string `xml:"Ebs>VolumeType"`
}

type xmlLaunchConfiguration struct {
	LaunchConfigurationName string           `xml:"LaunchConfigurationName"`
	ImageID                 string           `xml:"ImageId"`
	InstanceType            string           `xml:"InstanceType"`
	BlockDeviceMappings     []xmlBlockDevice `xml:"BlockDeviceMappings>member"`
	CreatedTime             string           `xml:"CreatedTime"`
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (s *Server) groupARN(name string) string {
	return fmt.Sprintf("arn:aws:autoscaling:%s:%s:autoScalingGroup:00000000-0000-4000-8000-%012x:autoScalingGroupName/%s",
		s.region, DefaultAccountID, s.idBase, name)
}

func ltSpec(ref LaunchTemplateRef) xmlLaunchTemplateSpec {
	return xmlLaunchTemplateSpec{LaunchTemplateID: ref.ID, LaunchTemplateName: ref.Name, Version: ref.Version}
}

func (s *Server) xmlGroupLocked(g *group) xmlGroup {
	x := xmlGroup{
		AutoScalingGroupName: g.spec.Name, AutoScalingGroupARN: s.groupARN(g.spec.Name),
		LaunchConfigurationName: g.spec.LaunchConfigurationName,
		MinSize:                 g.spec.MinSize, MaxSize: g.spec.MaxSize, DesiredCapacity: g.spec.DesiredCapacity,
		DefaultCooldown: 300, AvailabilityZones: g.spec.AvailabilityZones, VPCZoneIdentifier: strings.Join(g.spec.Subnets, ","),
		HealthCheckType: "EC2", HealthCheckGracePeriod: 300, CreatedTime: timestamp(g.created),
		TerminationPolicies:  []string{"Default"},
		ServiceLinkedRoleARN: fmt.Sprintf("arn:aws:iam::%s:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling", DefaultAccountID),
	}
	if g.spec.LaunchTemplate != nil {
		spec := ltSpec(*g.spec.LaunchTemplate)
		x.LaunchTemplate = &spec
	}
	if p := g.spec.MixedInstancesPolicy; p != nil {
		mp := &xmlMixedInstancesPolicy{LaunchTemplateSpecification: ltSpec(p.LaunchTemplate), OnDemandAllocationStrategy: "prioritized",
			OnDemandBaseCapacity: p.OnDemandBaseCapacity, OnDemandPercentage: 100, SpotAllocationStrategy: "price-capacity-optimized"}
		if p.OnDemandPercentageAboveBaseCapacity != nil {
			mp.OnDemandPercentage = *p.OnDemandPercentageAboveBaseCapacity
		}
		for _, o := range p.Overrides {
			xo := xmlOverride{InstanceType: o.InstanceType}
			if r := o.Requirements; r != nil {
				xo.InstanceRequirements = &xmlASGRequirements{VCPUCount: xmlRange{r.VCPUMin, r.VCPUMax}, MemoryMiB: xmlRange{r.MemoryMiBMin, r.MemoryMiBMax}}
			}
			mp.Overrides = append(mp.Overrides, xo)
		}
		x.MixedInstancesPolicy = mp
	}
	for _, in := range g.instances {
		xi := xmlInstance{InstanceID: in.ID, InstanceType: in.InstanceType, AvailabilityZone: in.Zone,
			LifecycleState: in.LifecycleState, HealthStatus: in.HealthStatus}
		// An instance records the launch template version it was
		// launched from, by number.
		if lt := x.LaunchTemplate; lt != nil || x.MixedInstancesPolicy != nil {
			if lt == nil {
				lt = &x.MixedInstancesPolicy.LaunchTemplateSpecification
			}
			spec := *lt
			spec.Version = in.LaunchTemplateVersion
			xi.LaunchTemplate = &spec
		}
		x.Instances = append(x.Instances, xi)
	}
	for _, k := range sortedKeys(g.spec.Tags) {
		x.Tags = append(x.Tags, xmlTag{ResourceID: g.spec.Name, ResourceType: "auto-scaling-group", Key: k, Value: g.spec.Tags[k], PropagateAtLaunch: true})
	}
	return x
}

// listParam collects prefix.1, prefix.2, ... in order.
func listParam(params url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := params[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

func validation(format string, args ...any) *APIError {
	return &APIError{HTTPStatus: http.StatusBadRequest, Code: "ValidationError", Message: fmt.Sprintf(format, args...)}
}

// page cuts items [offset, offset+size) with size the smaller of the
// request's max and the emulator's page size, and returns the next token.
func (s *Server) page(total int, params url.Values, maxKey string, defaultMax int) (from, to int, next string, err *APIError) {
	size := defaultMax
	if v := params.Get(maxKey); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 100 {
			return 0, 0, "", validation("%s %q must be between 1 and 100", maxKey, v)
		}
		size = n
	}
	if s.pageSize > 0 && s.pageSize < size {
		size = s.pageSize
	}
	if tok := params.Get("NextToken"); tok != "" {
		raw, derr := base64.StdEncoding.DecodeString(tok)
		n, perr := strconv.Atoi(strings.TrimPrefix(string(raw), "offset:"))
		if derr != nil || perr != nil || !strings.HasPrefix(string(raw), "offset:") || n < 0 || n > total {
			return 0, 0, "", &APIError{HTTPStatus: http.StatusBadRequest, Code: "InvalidNextToken", Message: "The token is invalid."}
		}
		from = n
	}
	to = min(from+size, total)
	if to < total {
		next = base64.StdEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(to)))
	}
	return from, to, next, nil
}

type asgFilter struct {
	name   string
	values []string
}

// matches applies one DescribeAutoScalingGroups filter: tag-key,
// tag-value, tag:<key>. Values of a filter are ORed.
func (f asgFilter) matches(g *group) bool {
	for _, v := range f.values {
		switch {
		case f.name == "tag-key":
			if g.hasTag(v) {
				return true
			}
		case f.name == "tag-value":
			for _, tv := range g.spec.Tags {
				if tv == v {
					return true
				}
			}
		case strings.HasPrefix(f.name, "tag:"):
			if tv, ok := g.spec.Tags[strings.TrimPrefix(f.name, "tag:")]; ok && tv == v {
				return true
			}
		}
	}
	return false
}

func (s *Server) describeAutoScalingGroups(w http.ResponseWriter, params url.Values) *APIError {
	names := listParam(params, "AutoScalingGroupNames.member")
	var filters []asgFilter
	for i := 1; ; i++ {
		p := "Filters.member." + strconv.Itoa(i)
		name := params.Get(p + ".Name")
		if name == "" {
			break
		}
		switch {
		case name == "tag-key", name == "tag-value", strings.HasPrefix(name, "tag:") && len(name) > 4:
		default:
			return validation("Filter name %q is not supported", name)
		}
		values := listParam(params, p+".Values.member")
		if len(values) == 0 {
			return validation("Filter %q has no values", name)
		}
		filters = append(filters, asgFilter{name: name, values: values})
	}
	if len(names) > 0 && len(filters) > 0 {
		return validation("AutoScalingGroupNames and Filters cannot be combined in this emulator")
	}
	if len(names) > 100 {
		return validation("At most 100 AutoScalingGroupNames may be given, got %d", len(names))
	}
	s.mu.Lock()
	var matched []xmlGroup
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	for _, name := range sortedKeys(s.groups) {
		g := s.groups[name]
		if len(names) > 0 && !wanted[name] {
			continue
		}
		ok := true
		for _, f := range filters {
			ok = ok && f.matches(g)
		}
		if ok {
			matched = append(matched, s.xmlGroupLocked(g))
		}
	}
	s.mu.Unlock()
	from, to, next, err := s.page(len(matched), params, "MaxRecords", 50)
	if err != nil {
		return err
	}
	writeQueryResult(w, "DescribeAutoScalingGroups", struct {
		Groups    []xmlGroup `xml:"AutoScalingGroups>member"`
		NextToken string     `xml:"NextToken,omitempty"`
	}{matched[from:to], next})
	return nil
}

func parseBool(params url.Values, key string) (bool, bool, *APIError) {
	v := params.Get(key)
	if v == "" {
		return false, false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, false, validation("%s %q is not a boolean", key, v)
	}
	return b, true, nil
}

func (s *Server) setDesiredCapacity(w http.ResponseWriter, params url.Values) *APIError {
	name := params.Get("AutoScalingGroupName")
	desired, err := strconv.Atoi(params.Get("DesiredCapacity"))
	if name == "" || err != nil {
		return validation("AutoScalingGroupName and an integer DesiredCapacity are required")
	}
	if _, _, e := parseBool(params, "HonorCooldown"); e != nil {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	switch {
	case !ok:
		return validation("AutoScalingGroup name not found - AutoScalingGroup %s not found", name)
	case desired > g.spec.MaxSize:
		return validation("New SetDesiredCapacity value %d is above max value %d for the AutoScalingGroup.", desired, g.spec.MaxSize)
	case desired < g.spec.MinSize:
		return validation("New SetDesiredCapacity value %d is below min value %d for the AutoScalingGroup.", desired, g.spec.MinSize)
	}
	g.spec.DesiredCapacity = desired
	writeQueryResult(w, "SetDesiredCapacity", nil)
	return nil
}

func (s *Server) terminateInstanceInAutoScalingGroup(w http.ResponseWriter, params url.Values) *APIError {
	id := params.Get("InstanceId")
	decrement, given, e := parseBool(params, "ShouldDecrementDesiredCapacity")
	if e != nil {
		return e
	}
	if id == "" || !given {
		return validation("InstanceId and ShouldDecrementDesiredCapacity are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var g *group
	var in *Instance
	for _, name := range sortedKeys(s.groups) {
		if found := s.groups[name].instance(id); found != nil {
			g, in = s.groups[name], found
		}
	}
	if in == nil {
		return validation("Instance Id not found - No managed instance found for instance ID: %s", id)
	}
	if in.LifecycleState == StateTerminating || in.LifecycleState == StateTerminated {
		return validation("The instance %s is already in state %s.", id, in.LifecycleState)
	}
	if decrement {
		if g.spec.DesiredCapacity-1 < g.spec.MinSize {
			return validation("Currently, desiredSize equals minSize (%d). Terminating instance without replacement will violate group's min size constraint. "+
				"Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.", g.spec.MinSize)
		}
		g.spec.DesiredCapacity--
	}
	now := s.clock.Now()
	why := "instance " + id + " was taken out of service in response to a user request"
	if decrement {
		why += fmt.Sprintf(", shrinking the capacity from %d to %d", g.spec.DesiredCapacity+1, g.spec.DesiredCapacity)
	}
	a := s.terminateLocked(g, in, now, why)
	writeQueryResult(w, "TerminateInstanceInAutoScalingGroup", struct {
		Activity xmlActivity `xml:"Activity"`
	}{s.xmlActivity(a)})
	return nil
}

func (s *Server) xmlActivity(a *Activity) xmlActivity {
	x := xmlActivity{ActivityID: a.ID, AutoScalingGroupName: a.Group, AutoScalingGroupARN: s.groupARN(a.Group),
		Description: a.Description, Cause: a.Cause, StartTime: timestamp(a.StartTime), StatusCode: a.StatusCode,
		StatusMessage: a.StatusMessage, Progress: a.Progress, Details: `{"Subnet ID":"subnet-0","Availability Zone":"` + s.region + `a"}`}
	if !a.EndTime.IsZero() {
		x.EndTime = timestamp(a.EndTime)
	}
	return x
}

func (s *Server) describeScalingActivities(w http.ResponseWriter, params url.Values) *APIError {
	name := params.Get("AutoScalingGroupName")
	ids := map[string]bool{}
	for _, id := range listParam(params, "ActivityIds.member") {
		ids[id] = true
	}
	s.mu.Lock()
	var acts []xmlActivity
	for _, gname := range sortedKeys(s.groups) {
		if name != "" && gname != name {
			continue
		}
		g := s.groups[gname]
		for i := len(g.activities) - 1; i >= 0; i-- {
			if len(ids) == 0 || ids[g.activities[i].ID] {
				acts = append(acts, s.xmlActivity(g.activities[i]))
			}
		}
	}
	s.mu.Unlock()
	from, to, next, err := s.page(len(acts), params, "MaxRecords", 100)
	if err != nil {
		return err
	}
	writeQueryResult(w, "DescribeScalingActivities", struct {
		Activities []xmlActivity `xml:"Activities>member"`
		NextToken  string        `xml:"NextToken,omitempty"`
	}{acts[from:to], next})
	return nil
}

func (s *Server) describeLaunchConfigurations(w http.ResponseWriter, params url.Values) *APIError {
	names := listParam(params, "LaunchConfigurationNames.member")
	s.mu.Lock()
	var out []xmlLaunchConfiguration
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	for _, n := range sortedKeys(s.launchConfigs) {
		if len(names) > 0 && !wanted[n] {
			continue
		}
		lc := s.launchConfigs[n]
		x := xmlLaunchConfiguration{LaunchConfigurationName: lc.Name, ImageID: lc.ImageID, InstanceType: lc.InstanceType, CreatedTime: timestamp(time.Unix(0, 0))}
		if lc.RootVolumeGiB > 0 {
			x.BlockDeviceMappings = []xmlBlockDevice{{DeviceName: "/dev/xvda", VolumeSize: lc.RootVolumeGiB, VolumeType: "gp3"}}
		}
		out = append(out, x)
	}
	s.mu.Unlock()
	from, to, next, err := s.page(len(out), params, "MaxRecords", 50)
	if err != nil {
		return err
	}
	writeQueryResult(w, "DescribeLaunchConfigurations", struct {
		LaunchConfigurations []xmlLaunchConfiguration `xml:"LaunchConfigurations>member"`
		NextToken            string                   `xml:"NextToken,omitempty"`
	}{out[from:to], next})
	return nil
}

func requestID() string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", time.Now().UnixNano()&0xffffffff, time.Now().UnixNano()&0xffffffffffff)
}

// writeQueryResult writes an awsQuery response:
// <ActionResponse><ActionResult>...</ActionResult><ResponseMetadata/></ActionResponse>.
func writeQueryResult(w http.ResponseWriter, action string, result any) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s">`, action, autoscalingNamespace)
	if result != nil {
		enc := xml.NewEncoder(&buf)
		if err := enc.EncodeElement(result, xml.StartElement{Name: xml.Name{Local: action + "Result"}}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	id := requestID()
	fmt.Fprintf(&buf, `<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`, id, action)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", id)
	_, _ = w.Write(buf.Bytes())
}

// writeQueryError writes an awsQuery error: <ErrorResponse><Error>...</Error></ErrorResponse>.
func writeQueryError(w http.ResponseWriter, _ string, e APIError) {
	typ := "Sender"
	if e.HTTPStatus >= 500 {
		typ = "Receiver"
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	type xmlErr struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	id := requestID()
	_ = xml.NewEncoder(&buf).Encode(struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Error     xmlErr   `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}{Xmlns: autoscalingNamespace, Error: xmlErr{typ, e.Code, e.Message}, RequestID: id})
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", id)
	w.WriteHeader(e.HTTPStatus)
	_, _ = w.Write(buf.Bytes())
}
