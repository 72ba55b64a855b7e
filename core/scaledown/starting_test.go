package scaledown

import (
	"maps"
	"slices"
	"testing"
)

func TestUnusedNewNodes(t *testing.T) {
	starting := func(name, group string) NewNode { return NewNode{Name: name, Group: group} }
	ready := func(name, group string) NewNode { return NewNode{Name: name, Group: group, Ready: true} }
	with := func(n NewNode, edit func(*NewNode)) NewNode { edit(&n); return n }
	bound := func(n *NewNode) { n.Bound = 1 }
	nominated := func(n *NewNode) { n.Nominated = 1 }
	planned := func(n *NewNode) { n.Planned = true }
	groups := func() map[string]NewNodeGroup {
		return map[string]NewNodeGroup{"a": {Target: 4, Min: 0}, "b": {Target: 3, Min: 2}}
	}
	atMin := "node group b at its minimum size (2)"
	for _, tc := range []struct {
		name   string
		nodes  []NewNode
		unused []string // the state in
		edit   func(*UnusedInput)
		remove []string
		kept   map[string]string
		next   []string // the state out
	}{
		{name: "none new"},
		{name: "a starting node with a pod bound stays, and is used",
			nodes: []NewNode{with(starting("a-1", "a"), bound)}},
		{name: "a starting node with a pod nominated or planned stays, unused",
			nodes: []NewNode{with(starting("a-1", "a"), nominated), with(starting("a-2", "a"), planned)},
			next:  []string{"a-1", "a-2"}},
		{name: "starting nodes with nothing on them and nothing planned go",
			nodes:  []NewNode{with(starting("a-1", "a"), planned), starting("a-2", "a"), starting("a-0", "a")},
			remove: []string{"a-0", "a-2"}, next: []string{"a-0", "a-1", "a-2"}},
		{name: "a ready node seen starting and unused since goes",
			nodes: []NewNode{ready("a-0", "a")}, unused: []string{"a-0"},
			remove: []string{"a-0"}, next: []string{"a-0"}},
		{name: "a ready node not seen starting, or seen running a pod, is scale-down's",
			nodes: []NewNode{ready("a-0", "a"), ready("a-1", "a")}, unused: []string{"a-2"}},
		{name: "a ready node with a pod bound is used from then on",
			nodes: []NewNode{with(ready("a-0", "a"), bound)}, unused: []string{"a-0"}},
		{name: "a ready unused node the plan places pods on stays",
			nodes: []NewNode{with(ready("a-0", "a"), planned)}, unused: []string{"a-0"}, next: []string{"a-0"}},
		{name: "a group goes down to its minimum, the last nodes by name first",
			nodes:  []NewNode{starting("b-0", "b"), starting("b-2", "b"), starting("b-1", "b")},
			remove: []string{"b-2"}, kept: map[string]string{"b-0": atMin, "b-1": atMin}, next: []string{"b-0", "b-1", "b-2"}},
		{name: "an unsettled decision keeps every node",
			nodes: []NewNode{starting("a-0", "a"), starting("b-2", "b")},
			edit:  func(in *UnusedInput) { in.Unsettled = "out of time" },
			kept:  map[string]string{"a-0": "out of time", "b-2": "out of time"}, next: []string{"a-0", "b-2"}},
		{name: "a held node or a node of a held group stays, the others go",
			nodes: []NewNode{starting("a-0", "a"), with(starting("b-1", "b"), func(n *NewNode) { n.Held = "annotated" }), starting("b-2", "b")},
			edit: func(in *UnusedInput) {
				g := in.Groups["a"]
				g.Held = "allocation trigger"
				in.Groups["a"] = g
			},
			remove: []string{"b-2"}, kept: map[string]string{"a-0": "allocation trigger", "b-1": "annotated"},
			next: []string{"a-0", "b-1", "b-2"}},
		{name: "a node of a group not observed stays",
			nodes: []NewNode{starting("c-0", "c")},
			kept:  map[string]string{"c-0": "its node group was not observed"}, next: []string{"c-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := UnusedInput{Nodes: tc.nodes, Groups: groups(), Unused: map[string]bool{}}
			for _, n := range tc.unused {
				in.Unused[n] = true
			}
			if tc.edit != nil {
				tc.edit(&in)
			}
			before := slices.Clone(in.Nodes)
			got := UnusedNewNodes(in)
			var names []string
			for _, n := range got.Remove {
				names = append(names, n.Name)
			}
			if !slices.Equal(names, tc.remove) {
				t.Errorf("removed %v, want %v", names, tc.remove)
			}
			if len(got.Kept) > 0 || len(tc.kept) > 0 {
				if !maps.Equal(got.Kept, tc.kept) {
					t.Errorf("kept %v, want %v", got.Kept, tc.kept)
				}
			}
			if next := slices.Sorted(maps.Keys(got.Unused)); !slices.Equal(next, tc.next) {
				t.Errorf("unused after %v, want %v", next, tc.next)
			}
			if !slices.Equal(in.Nodes, before) {
				t.Errorf("the input's nodes were reordered: %v, was %v", in.Nodes, before)
			}
		})
	}
}
