package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Config is the local cloud: its node groups.
type Config struct {
	NodeGroups []GroupSpec `json:"nodeGroups"`
}

// GroupSpec describes one local node group and the nodes it makes.
type GroupSpec struct {
	Name    string `json:"name"`
	MinSize int    `json:"minSize"`
	MaxSize int    `json:"maxSize"`
	// InitialSize is how many nodes exist when the cloud starts; it
	// defaults to MinSize.
	InitialSize  *int              `json:"initialSize,omitempty"`
	Zone         string            `json:"zone"`
	InstanceType string            `json:"instanceType"`
	CPU          resource.Quantity `json:"cpu"`
	Memory       resource.Quantity `json:"memory"`
	Pods         int64             `json:"pods,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []corev1.Taint    `json:"taints,omitempty"`
	// PricePerHour is what one node costs per hour; a group without one
	// has no price (Pricing answers an error for its nodes), so it is
	// never chosen for its price.
	PricePerHour *float64 `json:"pricePerHour,omitempty"`
	// ProvisioningDelay is how long a requested node takes to appear.
	ProvisioningDelay Duration `json:"provisioningDelay,omitempty"`
	// Fault makes every launch in this group fail: "out-of-capacity" or
	// "launch-failure".
	Fault Fault `json:"fault,omitempty"`
}

// Duration is a time.Duration written as "2s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"2s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// DefaultConfig is three pools in two zones: general-purpose nodes in each
// zone and a larger high-memory pool in zone-a.
func DefaultConfig() *Config {
	one := 1
	return &Config{NodeGroups: []GroupSpec{
		{Name: "general-a", MinSize: 1, MaxSize: 10, InitialSize: &one, Zone: "zone-a", InstanceType: "standard-4",
			CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi"), Pods: 110, PricePerHour: ptr.To(0.19),
			ProvisioningDelay: Duration{2 * time.Second}},
		{Name: "general-b", MinSize: 0, MaxSize: 10, Zone: "zone-b", InstanceType: "standard-4",
			CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi"), Pods: 110, PricePerHour: ptr.To(0.19),
			ProvisioningDelay: Duration{2 * time.Second}},
		{Name: "highmem-a", MinSize: 0, MaxSize: 5, Zone: "zone-a", InstanceType: "highmem-8",
			CPU: resource.MustParse("8"), Memory: resource.MustParse("64Gi"), Pods: 110, PricePerHour: ptr.To(0.50),
			ProvisioningDelay: Duration{3 * time.Second}},
	}}
}

// LoadConfig reads a node-group file; an empty path gives DefaultConfig.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return DefaultConfig(), nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--local-node-groups: %w", err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("--local-node-groups=%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses and validates a node-group file. Unknown fields are
// errors, so a typo does not silently fall back to a default.
func ParseConfig(raw []byte) (*Config, error) {
	var cfg Config
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate checks every group and names the first problem of each.
func (c *Config) Validate() error {
	if len(c.NodeGroups) == 0 {
		return errors.New("no nodeGroups given")
	}
	var errs []error
	seen := map[string]bool{}
	for i, g := range c.NodeGroups {
		if err := g.validate(); err != nil {
			errs = append(errs, fmt.Errorf("nodeGroups[%d] (%q): %w", i, g.Name, err))
		}
		if seen[g.Name] {
			errs = append(errs, fmt.Errorf("nodeGroups[%d]: name %q is used twice", i, g.Name))
		}
		seen[g.Name] = true
	}
	return errors.Join(errs...)
}

// maxGroupNameLength keeps the names of the group's nodes valid hostname
// labels (63 characters at most): template-node-for-<name>, and
// <name>-<number> up to 17 digits.
const maxGroupNameLength = 45

func (g GroupSpec) validate() error {
	if msgs := validation.IsDNS1123Label(g.Name); len(msgs) > 0 {
		return fmt.Errorf("name: %v", msgs)
	}
	if len(g.Name) > maxGroupNameLength {
		return fmt.Errorf("name: at most %d characters, so that node names (%s) are valid hostnames", maxGroupNameLength, templateNodeName(g.Name))
	}
	if err := g.validateNodeMeta(); err != nil {
		return err
	}
	switch {
	case g.MinSize < 0 || g.MaxSize < 1 || g.MinSize > g.MaxSize:
		return fmt.Errorf("minSize %d and maxSize %d: want 0 <= minSize <= maxSize and maxSize >= 1", g.MinSize, g.MaxSize)
	case g.InitialSize != nil && (*g.InitialSize < g.MinSize || *g.InitialSize > g.MaxSize):
		return fmt.Errorf("initialSize %d is outside [%d, %d]", *g.InitialSize, g.MinSize, g.MaxSize)
	case g.CPU.Sign() <= 0 || g.Memory.Sign() <= 0:
		return fmt.Errorf("cpu %q and memory %q must be positive", g.CPU.String(), g.Memory.String())
	case g.Pods < 0:
		return fmt.Errorf("pods %d is negative", g.Pods)
	case g.Zone == "":
		return errors.New("zone is empty")
	case g.PricePerHour != nil && !validPrice(*g.PricePerHour):
		return fmt.Errorf("pricePerHour %v must be a positive number", *g.PricePerHour)
	case g.ProvisioningDelay.Duration < 0:
		return fmt.Errorf("provisioningDelay %v is negative", g.ProvisioningDelay)
	}
	return g.Fault.validate()
}

// validPrice reports whether p is a price a node may cost per hour: a
// finite number above 0 (a free node would always win a comparison of
// prices; leave the price out to say it is unknown).
func validPrice(p float64) bool {
	return p > 0 && !math.IsInf(p, 0)
}

// validateNodeMeta checks what the group's Nodes carry as labels and
// taints, as the API server would when the Node is created.
func (g GroupSpec) validateNodeMeta() error {
	labels := map[string]string{"zone": g.Zone, "instanceType": g.InstanceType}
	for k, v := range g.Labels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(msgs, "; "))
		}
		labels[fmt.Sprintf("label %q", k)] = v
	}
	for what, v := range labels {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			return fmt.Errorf("%s %q is not a valid label value: %s", what, v, strings.Join(msgs, "; "))
		}
	}
	for _, t := range g.Taints {
		msgs := validation.IsQualifiedName(t.Key)
		if t.Value != "" {
			msgs = append(msgs, validation.IsValidLabelValue(t.Value)...)
		}
		if len(msgs) > 0 {
			return fmt.Errorf("taint %q=%q: %s", t.Key, t.Value, strings.Join(msgs, "; "))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Key, t.Effect)
		}
	}
	return nil
}

// ApplyNodeGroupFlags restricts the cloud to the groups named by --nodes,
// with the sizes given there. Without --nodes every group is managed with
// the sizes of the file.
func (c *Config) ApplyNodeGroupFlags(specs []cloudprovider.NodeGroupSpec) error {
	if len(specs) == 0 {
		return nil
	}
	byName := map[string]GroupSpec{}
	for _, g := range c.NodeGroups {
		byName[g.Name] = g
	}
	groups := make([]GroupSpec, 0, len(specs))
	for _, s := range specs {
		g, ok := byName[s.Name]
		if !ok {
			return fmt.Errorf("--nodes=%s: the local cloud has no node group %q (it has %v)", s, s.Name, c.names())
		}
		g.MinSize, g.MaxSize = s.MinSize, s.MaxSize
		if g.InitialSize != nil && *g.InitialSize > g.MaxSize {
			g.InitialSize = &g.MaxSize
		}
		if g.InitialSize != nil && *g.InitialSize < g.MinSize {
			g.InitialSize = &g.MinSize
		}
		groups = append(groups, g)
	}
	c.NodeGroups = groups
	return nil
}

func (c *Config) names() []string {
	out := make([]string, len(c.NodeGroups))
	for i, g := range c.NodeGroups {
		out[i] = g.Name
	}
	return out
}
