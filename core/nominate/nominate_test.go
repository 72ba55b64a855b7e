package nominate

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func pending(name, nominated string) Pod {
	return Pod{Namespace: "ns", Name: name, Nominated: nominated}
}

func nom(name, node string) Nomination { return Nomination{Namespace: "ns", Name: name, Node: node} }

func set(name, node string) Change {
	return Change{UID: types.UID(name), Namespace: "ns", Name: name, Node: node}
}

func TestDecide(t *testing.T) {
	usable := map[string]bool{"n1": true, "n2": true}
	for _, tc := range []struct {
		name               string
		pods               map[types.UID]Pod
		planned            map[types.UID]string
		standing           State
		budget             int
		wantClear, wantSet []Change
		wantNext           State
		wantDeferred       int
	}{{
		name:     "a planned pod is nominated to its node",
		pods:     map[types.UID]Pod{"a": pending("a", "")},
		planned:  map[types.UID]string{"a": "n1"},
		budget:   10,
		wantSet:  []Change{set("a", "n1")},
		wantNext: State{"a": nom("a", "n1")},
	}, {
		name:     "a pod already nominated there needs no write",
		pods:     map[types.UID]Pod{"a": pending("a", "n1")},
		planned:  map[types.UID]string{"a": "n1"},
		budget:   10,
		wantNext: State{"a": nom("a", "n1")},
	}, {
		name:     "a nomination the scheduler cleared is set again while planned",
		pods:     map[types.UID]Pod{"a": pending("a", "")},
		planned:  map[types.UID]string{"a": "n1"},
		standing: State{"a": nom("a", "n1")},
		budget:   10,
		wantSet:  []Change{set("a", "n1")},
		wantNext: State{"a": nom("a", "n1")},
	}, {
		name:     "a nomination made by preemption is left alone",
		pods:     map[types.UID]Pod{"a": pending("a", "other")},
		planned:  map[types.UID]string{"a": "n1"},
		budget:   10,
		wantNext: State{},
	}, {
		name:     "a replaced plan moves tidal's nomination",
		pods:     map[types.UID]Pod{"a": pending("a", "n1")},
		planned:  map[types.UID]string{"a": "n2"},
		standing: State{"a": nom("a", "n1")},
		budget:   10,
		wantSet:  []Change{set("a", "n2")},
		wantNext: State{"a": nom("a", "n2")},
	}, {
		name:     "a standing nomination stands while its node can take the pod",
		pods:     map[types.UID]Pod{"a": pending("a", "n1")},
		standing: State{"a": nom("a", "n1")},
		budget:   10,
		wantNext: State{"a": nom("a", "n1")},
	}, {
		name:      "a nomination to a node gone is withdrawn",
		pods:      map[types.UID]Pod{"a": pending("a", "gone")},
		standing:  State{"a": nom("a", "gone")},
		budget:    10,
		wantClear: []Change{set("a", "")},
		wantNext:  State{},
	}, {
		name:     "a pod bound elsewhere is forgotten without a write",
		pods:     map[types.UID]Pod{"a": {Namespace: "ns", Name: "a", Node: "n2", Nominated: "n1"}},
		standing: State{"a": nom("a", "n1")},
		budget:   10,
		wantNext: State{},
	}, {
		name:     "a pod deleted is forgotten",
		standing: State{"a": nom("a", "n1")},
		budget:   10,
		wantNext: State{},
	}, {
		name:     "a cleared nomination no plan names is forgotten",
		pods:     map[types.UID]Pod{"a": pending("a", "")},
		standing: State{"a": nom("a", "n1")},
		budget:   10,
		wantNext: State{},
	}, {
		name:     "a planned node that cannot take pods gets no nomination",
		pods:     map[types.UID]Pod{"a": pending("a", "")},
		planned:  map[types.UID]string{"a": "starting"},
		budget:   10,
		wantNext: State{},
	}, {
		name:         "the budget takes clears first; the rest waits and the state stays true",
		pods:         map[types.UID]Pod{"a": pending("a", "gone"), "b": pending("b", ""), "c": pending("c", "n1")},
		planned:      map[types.UID]string{"b": "n1", "c": "n2"},
		standing:     State{"a": nom("a", "gone"), "c": nom("c", "n1")},
		budget:       2,
		wantClear:    []Change{set("a", "")},
		wantSet:      []Change{set("b", "n1")},
		wantNext:     State{"b": nom("b", "n1"), "c": nom("c", "n1")},
		wantDeferred: 1,
	}, {
		name:         "no budget, no write",
		pods:         map[types.UID]Pod{"a": pending("a", "gone")},
		standing:     State{"a": nom("a", "gone")},
		wantNext:     State{"a": nom("a", "gone")},
		wantDeferred: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(Input{Pods: tc.pods, Planned: tc.planned, Usable: usable, Standing: tc.standing, Budget: tc.budget})
			if len(got.Clear) > 0 || len(tc.wantClear) > 0 {
				if !reflect.DeepEqual(got.Clear, tc.wantClear) {
					t.Errorf("clear = %v, want %v", got.Clear, tc.wantClear)
				}
			}
			if len(got.Set) > 0 || len(tc.wantSet) > 0 {
				if !reflect.DeepEqual(got.Set, tc.wantSet) {
					t.Errorf("set = %v, want %v", got.Set, tc.wantSet)
				}
			}
			if !reflect.DeepEqual(got.Next, tc.wantNext) {
				t.Errorf("next = %v, want %v", got.Next, tc.wantNext)
			}
			if got.Deferred != tc.wantDeferred {
				t.Errorf("deferred = %d, want %d", got.Deferred, tc.wantDeferred)
			}
		})
	}
}

func TestFailedWritesLeaveTheStateAsItWas(t *testing.T) {
	before := State{"a": nom("a", "gone"), "c": nom("c", "n1")}
	next := State{"b": nom("b", "n1"), "c": nom("c", "n2")}
	next.Failed([]Change{set("a", ""), set("b", "n1"), set("c", "n2")}, before)
	want := State{"a": nom("a", "gone"), "c": nom("c", "n1")}
	if !reflect.DeepEqual(next, want) {
		t.Errorf("state = %v, want %v", next, want)
	}
}
