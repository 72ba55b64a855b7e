package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// NodeGroupSpec is one --nodes=MIN:MAX:NAME value, in the type the
// providers take.
type NodeGroupSpec = cloudprovider.NodeGroupSpec

// ParseNodeGroupSpec parses MIN:MAX:NAME as Cluster Autoscaler does. The
// error names the bad value and what is wrong with it.
func ParseNodeGroupSpec(value string) (NodeGroupSpec, error) {
	parts := strings.SplitN(value, ":", 3)
	if len(parts) != 3 {
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: want MIN:MAX:NAME, for example 1:10:pool-a", value)
	}
	min, err := parseSize(parts[0])
	if err != nil {
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: minimum size %w", value, err)
	}
	max, err := parseSize(parts[1])
	if err != nil {
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: maximum size %w", value, err)
	}
	name := parts[2]
	switch {
	case name == "":
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: the node group name is empty", value)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: the node group name %q contains white space or a control character", value, name)
	case min > max:
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: minimum size %d is greater than maximum size %d", value, min, max)
	case max == 0:
		return NodeGroupSpec{}, fmt.Errorf("--nodes=%q: maximum size must be at least 1", value)
	}
	return NodeGroupSpec{MinSize: min, MaxSize: max, Name: name}, nil
}

func parseSize(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("%d is negative", n)
	}
	return n, nil
}

// ParseNodeGroupSpecs parses every --nodes value and rejects duplicate names.
func ParseNodeGroupSpecs(values []string) ([]NodeGroupSpec, error) {
	specs := make([]NodeGroupSpec, 0, len(values))
	seen := map[string]string{}
	for _, v := range values {
		s, err := ParseNodeGroupSpec(v)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[s.Name]; ok {
			return nil, fmt.Errorf("--nodes=%q: node group %q is already given by --nodes=%q", v, s.Name, prev)
		}
		seen[s.Name] = v
		specs = append(specs, s)
	}
	return specs, nil
}
