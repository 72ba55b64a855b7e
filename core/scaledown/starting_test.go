package scaledown

import (
	"maps"
	"slices"
	"testing"
)

func TestUnneededStarting(t *testing.T) {
	node := func(name, group string, pods int, planned bool) StartingNode {
		return StartingNode{Name: name, Group: group, Pods: pods, Planned: planned}
	}
	groups := func() map[string]StartingGroup {
		return map[string]StartingGroup{"a": {Target: 4, Min: 0}, "b": {Target: 3, Min: 2}}
	}
	for _, tc := range []struct {
		name   string
		nodes  []StartingNode
		edit   func(*StartingInput)
		cancel []string
		kept   map[string]string
	}{
		{name: "none starting"},
		{name: "a node with a pod bound or nominated stays", nodes: []StartingNode{node("a-1", "a", 1, false)}},
		{name: "a node the plan placed pods on stays", nodes: []StartingNode{node("a-1", "a", 0, true)}},
		{name: "a node with nothing on it and nothing planned goes",
			nodes:  []StartingNode{node("a-1", "a", 1, true), node("a-2", "a", 0, false), node("a-0", "a", 0, false)},
			cancel: []string{"a-0", "a-2"}},
		{name: "a group goes down to its minimum, the last nodes by name first",
			nodes:  []StartingNode{node("b-0", "b", 0, false), node("b-2", "b", 0, false), node("b-1", "b", 0, false)},
			cancel: []string{"b-2"},
			kept:   map[string]string{"b-0": "node group b at its minimum size (2)", "b-1": "node group b at its minimum size (2)"}},
		{name: "an unsettled decision keeps every node",
			nodes: []StartingNode{node("a-0", "a", 0, false), node("b-2", "b", 0, false)},
			edit:  func(in *StartingInput) { in.Unsettled = "the scale-up decision ran out of time" },
			kept:  map[string]string{"a-0": "the scale-up decision ran out of time", "b-2": "the scale-up decision ran out of time"}},
		{name: "a held group keeps its nodes, the others' go",
			nodes:  []StartingNode{node("a-0", "a", 0, false), node("b-2", "b", 0, false)},
			edit:   func(in *StartingInput) { g := in.Groups["a"]; g.Held = "allocation trigger"; in.Groups["a"] = g },
			cancel: []string{"b-2"},
			kept:   map[string]string{"a-0": "allocation trigger"}},
		{name: "a node of a group not observed stays",
			nodes: []StartingNode{node("c-0", "c", 0, false)},
			kept:  map[string]string{"c-0": "its node group was not observed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := StartingInput{Nodes: tc.nodes, Groups: groups()}
			if tc.edit != nil {
				tc.edit(&in)
			}
			before := slices.Clone(in.Nodes)
			got := UnneededStarting(in)
			var names []string
			for _, n := range got.Cancel {
				names = append(names, n.Name)
			}
			if !slices.Equal(names, tc.cancel) {
				t.Errorf("cancelled %v, want %v", names, tc.cancel)
			}
			if !maps.Equal(got.Kept, tc.kept) && (len(got.Kept) > 0 || len(tc.kept) > 0) {
				t.Errorf("kept %v, want %v", got.Kept, tc.kept)
			}
			if !slices.Equal(in.Nodes, before) {
				t.Errorf("the input's nodes were reordered: %v, was %v", in.Nodes, before)
			}
		})
	}
}
