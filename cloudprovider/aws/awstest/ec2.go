package awstest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// XML shapes of the EC2 responses (ec2query: camelCase, lists are <item>).

type xmlGPU struct {
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
	Count        int    `xml:"count"`
	MemoryMiB    int    `xml:"memoryInfo>sizeInMiB"`
}

type xmlGPUInfo struct {
	GPUs           []xmlGPU `xml:"gpus>item"`
	TotalMemoryMiB int      `xml:"totalGpuMemoryInMiB"`
}

type xmlInstanceType struct {
	InstanceType             string      `xml:"instanceType"`
	CurrentGeneration        bool        `xml:"currentGeneration"`
	SupportedUsageClasses    []string    `xml:"supportedUsageClasses>item"`
	Hypervisor               string      `xml:"hypervisor"`
	DefaultVCPUs             int         `xml:"vCpuInfo>defaultVCpus"`
	SupportedArchitectures   []string    `xml:"processorInfo>supportedArchitectures>item"`
	MemoryMiB                int         `xml:"memoryInfo>sizeInMiB"`
	MaximumNetworkInterfaces int         `xml:"networkInfo>maximumNetworkInterfaces"`
	IPv4AddressesPerIface    int         `xml:"networkInfo>ipv4AddressesPerInterface"`
	IPv6Supported            bool        `xml:"networkInfo>ipv6Supported"`
	GPUInfo                  *xmlGPUInfo `xml:"gpuInfo,omitempty"`
}

type xmlEC2Range struct {
	Min int `xml:"min"`
	Max int `xml:"max,omitempty"`
}

type xmlEC2Requirements struct {
	VCPUCount xmlEC2Range `xml:"vCpuCount"`
	MemoryMiB xmlEC2Range `xml:"memoryMiB"`
}

type xmlEC2BlockDevice struct {
	DeviceName string `xml:"deviceName"`
	VolumeSize int    `xml:"ebs>volumeSize"`
	VolumeType string `xml:"ebs>volumeType"`
}

type xmlLaunchTemplateData struct {
	InstanceType         string              `xml:"instanceType,omitempty"`
	ImageID              string              `xml:"imageId,omitempty"`
	InstanceRequirements *xmlEC2Requirements `xml:"instanceRequirements,omitempty"`
	BlockDeviceMappings  []xmlEC2BlockDevice `xml:"blockDeviceMappingSet>item"`
	MarketType           string              `xml:"instanceMarketOptions>marketType,omitempty"`
}

type xmlLaunchTemplateVersion struct {
	LaunchTemplateID   string                `xml:"launchTemplateId"`
	LaunchTemplateName string                `xml:"launchTemplateName"`
	VersionNumber      int                   `xml:"versionNumber"`
	DefaultVersion     bool                  `xml:"defaultVersion"`
	CreateTime         string                `xml:"createTime"`
	LaunchTemplateData xmlLaunchTemplateData `xml:"launchTemplateData"`
}

func ec2Error(status int, code, format string, args ...any) *APIError {
	return &APIError{HTTPStatus: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (s *Server) describeInstanceTypes(w http.ResponseWriter, params url.Values) *APIError {
	names := listParam(params, "InstanceType")
	s.mu.Lock()
	var out []xmlInstanceType
	var unknown []string
	if len(names) == 0 {
		names = sortedKeys(s.instanceTypes)
	}
	if len(names) > 100 {
		s.mu.Unlock()
		return ec2Error(http.StatusBadRequest, "InvalidParameterValue", "At most 100 instance types may be given, got %d", len(names))
	}
	for _, n := range names {
		t, ok := s.instanceTypes[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		x := xmlInstanceType{
			InstanceType: t.Name, CurrentGeneration: true, SupportedUsageClasses: []string{"on-demand", "spot"}, Hypervisor: "nitro",
			DefaultVCPUs: t.VCPUs, SupportedArchitectures: t.Architectures, MemoryMiB: t.MemoryMiB,
			MaximumNetworkInterfaces: t.MaxENIs, IPv4AddressesPerIface: t.IPv4PerENI, IPv6Supported: true,
		}
		if t.GPUs > 0 {
			x.GPUInfo = &xmlGPUInfo{GPUs: []xmlGPU{{Name: t.GPUName, Manufacturer: t.GPUManufacturer, Count: t.GPUs, MemoryMiB: t.GPUMemoryMiB}},
				TotalMemoryMiB: t.GPUs * t.GPUMemoryMiB}
		}
		out = append(out, x)
	}
	s.mu.Unlock()
	if len(unknown) > 0 {
		return ec2Error(http.StatusBadRequest, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
	}
	from, to, next, err := s.page(len(out), params, "MaxResults", 100)
	if err != nil {
		return err
	}
	writeEC2Result(w, "DescribeInstanceTypes", struct {
		InstanceTypes []xmlInstanceType `xml:"instanceTypeSet>item"`
		NextToken     string            `xml:"nextToken,omitempty"`
	}{out[from:to], next})
	return nil
}

func (s *Server) describeLaunchTemplateVersions(w http.ResponseWriter, params url.Values) *APIError {
	id, name := params.Get("LaunchTemplateId"), params.Get("LaunchTemplateName")
	if (id == "") == (name == "") {
		return ec2Error(http.StatusBadRequest, "MissingParameter", "Exactly one of LaunchTemplateId and LaunchTemplateName must be given")
	}
	versions := listParam(params, "LaunchTemplateVersion")
	s.mu.Lock()
	defer s.mu.Unlock()
	var lt *LaunchTemplate
	if id != "" {
		lt = s.launchTemplates[id]
		if lt == nil {
			return ec2Error(http.StatusBadRequest, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	} else {
		for _, k := range sortedKeys(s.launchTemplates) {
			if s.launchTemplates[k].Name == name {
				lt = s.launchTemplates[k]
			}
		}
		if lt == nil {
			return ec2Error(http.StatusBadRequest, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
		}
	}
	var nums []int
	if len(versions) == 0 {
		for i := range lt.Versions {
			nums = append(nums, i+1)
		}
	}
	for _, v := range versions {
		n, err := lt.version(v)
		if err != nil {
			return ec2Error(http.StatusBadRequest, "InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for the launch template %s.", v, lt.ID)
		}
		nums = append(nums, n)
	}
	var out []xmlLaunchTemplateVersion
	for _, n := range nums {
		d := lt.Versions[n-1]
		x := xmlLaunchTemplateVersion{LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, VersionNumber: n,
			DefaultVersion: n == lt.DefaultVersion, CreateTime: timestamp(s.clock.Now()),
			LaunchTemplateData: xmlLaunchTemplateData{InstanceType: d.InstanceType, ImageID: d.ImageID}}
		if r := d.Requirements; r != nil {
			x.LaunchTemplateData.InstanceRequirements = &xmlEC2Requirements{VCPUCount: xmlEC2Range{r.VCPUMin, r.VCPUMax},
				MemoryMiB: xmlEC2Range{r.MemoryMiBMin, r.MemoryMiBMax}}
		}
		if d.Spot {
			x.LaunchTemplateData.MarketType = "spot"
		}
		if d.RootVolumeGiB > 0 {
			x.LaunchTemplateData.BlockDeviceMappings = []xmlEC2BlockDevice{{DeviceName: "/dev/xvda", VolumeSize: d.RootVolumeGiB, VolumeType: "gp3"}}
		}
		out = append(out, x)
	}
	from, to, next, perr := s.page(len(out), params, "MaxResults", 100)
	if perr != nil {
		return perr
	}
	writeEC2Result(w, "DescribeLaunchTemplateVersions", struct {
		Versions  []xmlLaunchTemplateVersion `xml:"launchTemplateVersionSet>item"`
		NextToken string                     `xml:"nextToken,omitempty"`
	}{out[from:to], next})
	return nil
}

// writeEC2Result writes an ec2query response: the result's fields directly
// inside <ActionResponse>, after <requestId>.
func writeEC2Result(w http.ResponseWriter, action string, result any) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s"><requestId>%s</requestId>`, action, ec2Namespace, requestID())
	// Encode the result's fields without a wrapper element.
	var inner bytes.Buffer
	if err := xml.NewEncoder(&inner).EncodeElement(result, xml.StartElement{Name: xml.Name{Local: "x"}}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b := inner.Bytes()
	b = bytes.TrimPrefix(b, []byte("<x>"))
	b = bytes.TrimSuffix(b, []byte("</x>"))
	if bytes.Equal(b, []byte("<x/>")) || bytes.Equal(b, []byte("<x></x>")) {
		b = nil
	}
	buf.Write(b)
	fmt.Fprintf(&buf, `</%sResponse>`, action)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = w.Write(buf.Bytes())
}

// writeEC2Error writes an ec2query error: <Response><Errors><Error>...</Error></Errors></Response>.
func writeEC2Error(w http.ResponseWriter, e APIError) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	type xmlErr struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	_ = xml.NewEncoder(&buf).Encode(struct {
		XMLName   xml.Name `xml:"Response"`
		Errors    []xmlErr `xml:"Errors>Error"`
		RequestID string   `xml:"RequestID"`
	}{Errors: []xmlErr{{e.Code, e.Message}}, RequestID: requestID()})
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.HTTPStatus)
	_, _ = w.Write(buf.Bytes())
}
