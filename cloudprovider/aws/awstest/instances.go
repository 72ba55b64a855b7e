package awstest

import (
	"net/http"
	"net/url"
	"strings"
)

type xmlEC2Instance struct {
	InstanceID     string `xml:"instanceId"`
	ImageID        string `xml:"imageId"`
	StateCode      int    `xml:"instanceState>code"`
	StateName      string `xml:"instanceState>name"`
	PrivateDNSName string `xml:"privateDnsName"`
	InstanceType   string `xml:"instanceType"`
	LaunchTime     string `xml:"launchTime"`
	Zone           string `xml:"placement>availabilityZone"`
}

type xmlReservation struct {
	ReservationID string           `xml:"reservationId"`
	OwnerID       string           `xml:"ownerId"`
	Instances     []xmlEC2Instance `xml:"instancesSet>item"`
}

// ec2State is the EC2 instance state of an Auto Scaling lifecycle state.
func ec2State(lifecycle string) (int, string) {
	switch lifecycle {
	case StatePending:
		return 0, "pending"
	case StateTerminating:
		return 32, "shutting-down"
	case StateTerminated:
		return 48, "terminated"
	}
	return 16, "running"
}

// describeInstances answers DescribeInstances for InstanceId.N (all
// instances without ids), one instance per reservation; an unknown id
// fails the call, as EC2 does.
func (s *Server) describeInstances(w http.ResponseWriter, params url.Values) *APIError {
	ids := listParam(params, "InstanceId")
	s.mu.Lock()
	byID := map[string]*Instance{}
	for _, g := range s.groups {
		for _, in := range g.instances {
			byID[in.ID] = in
		}
	}
	if len(ids) == 0 {
		ids = sortedKeys(byID)
	}
	var out []xmlReservation
	var unknown []string
	for _, id := range ids {
		in, ok := byID[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		code, name := ec2State(in.LifecycleState)
		out = append(out, xmlReservation{ReservationID: "r-" + strings.TrimPrefix(in.ID, "i-"), OwnerID: DefaultAccountID,
			Instances: []xmlEC2Instance{{InstanceID: in.ID, ImageID: in.ImageID, StateCode: code, StateName: name,
				PrivateDNSName: in.PrivateDNSName, InstanceType: in.InstanceType, LaunchTime: timestamp(in.LaunchTime), Zone: in.Zone}}})
	}
	s.mu.Unlock()
	if len(unknown) > 0 {
		return ec2Error(http.StatusBadRequest, "InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(unknown, ", "))
	}
	from, to, next, err := s.page(len(out), params, "MaxResults", 1000)
	if err != nil {
		return err
	}
	writeEC2Result(w, "DescribeInstances", struct {
		Reservations []xmlReservation `xml:"reservationSet>item"`
		NextToken    string           `xml:"nextToken,omitempty"`
	}{out[from:to], next})
	return nil
}

// imageLocked is the AMI the group launches now: its launch template's
// image id, resolved from the SSM parameter for resolve:ssm:<name> ("" when
// the parameter does not exist: the launch would fail on AWS).
func (s *Server) imageLocked(g *group) string {
	ref := g.launchTemplate()
	if ref == nil {
		if lc, ok := s.launchConfigs[g.spec.LaunchConfigurationName]; ok {
			return lc.ImageID
		}
		return ""
	}
	d, err := s.launchTemplateDataLocked(*ref)
	if err != nil {
		return ""
	}
	if name, ok := strings.CutPrefix(d.ImageID, "resolve:ssm:"); ok {
		return s.parameters[name]
	}
	return d.ImageID
}
