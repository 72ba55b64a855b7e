package cloudprovider

import "fmt"

// NodeGroupSpec names a node group to manage with the given size bounds,
// as --nodes=MIN:MAX:NAME does; the command line builds these for the
// providers.
type NodeGroupSpec struct {
	MinSize int
	MaxSize int
	Name    string
}

func (s NodeGroupSpec) String() string {
	return fmt.Sprintf("%d:%d:%s", s.MinSize, s.MaxSize, s.Name)
}
