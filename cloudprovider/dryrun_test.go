package cloudprovider

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

type countingGroup struct {
	NodeGroup
	id    string
	calls int
}

func (g *countingGroup) Id() string                                        { return g.id }
func (g *countingGroup) TargetSize() (int, error)                          { return 3, nil }
func (g *countingGroup) IncreaseSize(context.Context, int) error           { g.calls++; return nil }
func (g *countingGroup) DecreaseTargetSize(context.Context, int) error     { g.calls++; return nil }
func (g *countingGroup) DeleteNodes(context.Context, []*corev1.Node) error { g.calls++; return nil }

type oneGroupCloud struct {
	CloudProvider
	g *countingGroup
}

func (c oneGroupCloud) NodeGroups() []NodeGroup { return []NodeGroup{c.g} }
func (c oneGroupCloud) NodeGroupForNode(*corev1.Node) (NodeGroup, error) {
	return c.g, nil
}

// TestDryRunRefusesEveryChangeAndPassesReads: no mutation reaches the
// wrapped group, each refusal is reported, and reads pass through.
func TestDryRunRefusesEveryChangeAndPassesReads(t *testing.T) {
	inner := &countingGroup{id: "g1"}
	var refused []string
	p := DryRun(oneGroupCloud{g: inner}, func(method, group string) { refused = append(refused, method+"/"+group) })
	g := p.NodeGroups()[0]
	viaNode, err := p.NodeGroupForNode(&corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"IncreaseSize":       func() error { return g.IncreaseSize(context.Background(), 1) },
		"DecreaseTargetSize": func() error { return g.DecreaseTargetSize(context.Background(), -1) },
		"DeleteNodes":        func() error { return viaNode.DeleteNodes(context.Background(), nil) },
	} {
		if err := call(); !errors.Is(err, ErrDryRun) {
			t.Errorf("%s: err %v, want ErrDryRun", name, err)
		}
	}
	if inner.calls != 0 {
		t.Errorf("%d mutations reached the cloud, want 0", inner.calls)
	}
	if len(refused) != 3 {
		t.Errorf("refusals reported %v, want 3", refused)
	}
	if n, err := g.TargetSize(); n != 3 || err != nil {
		t.Errorf("TargetSize through the wrapper: %d, %v; want 3", n, err)
	}
}
