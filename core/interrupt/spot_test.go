package interrupt

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

func TestReclaimed(t *testing.T) {
	act := func(node, group, kind, detail string) Action {
		return Action{Node: node, Group: group, Mark: Mark{Kind: kind, Detail: detail}}
	}
	spot := func(group, msg string) Reclaim {
		return Reclaim{Group: group, Info: cloudprovider.InstanceErrorInfo{ErrorClass: cloudprovider.OutOfResourcesErrorClass,
			ErrorCode: SpotReclaimed, ErrorMessage: msg}}
	}
	for _, tc := range []struct {
		name   string
		marked []Action
		want   []Reclaim
	}{{
		name:   "a spot warning backs its group off",
		marked: []Action{act("a", "spot", cloudprovider.SpotInterruption, "terminate")},
		want:   []Reclaim{spot("spot", "the cloud reclaims spot node a (terminate)")},
	}, {
		name: "other kinds take no capacity pool away: rebalance, scheduled change, state change, expiry, drift",
		marked: []Action{act("a", "spot", cloudprovider.RebalanceRecommendation, ""), act("b", "od", cloudprovider.ScheduledChange, "retirement"),
			act("c", "od", cloudprovider.StateChange, "stopping"), act("d", "od", Expired, ""), act("e", "spot", Drifted, "")},
		want: []Reclaim{},
	}, {
		name: "one backoff per group, named after its first node; a node of no group is left out",
		marked: []Action{act("c", "spot-b", cloudprovider.SpotInterruption, "stop"), act("b", "spot-a", cloudprovider.SpotInterruption, ""),
			act("a", "spot-b", cloudprovider.SpotInterruption, "terminate"), act("x", "", cloudprovider.SpotInterruption, "")},
		want: []Reclaim{spot("spot-a", "the cloud reclaims spot node b"), spot("spot-b", "the cloud reclaims spot node a (terminate) and 1 more")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Reclaimed(tc.marked)); diff != "" {
				t.Errorf("Reclaimed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLastResort(t *testing.T) {
	groups := []scaleup.Group{{ID: "spot", Unavailable: "in backoff (spot)"}, {ID: "od"}, {ID: "failed", Unavailable: "in backoff (stock-out)"}}
	left := func(byGroup ...string) *scaleup.Plan {
		n := scaleup.NoScaleUp{ByNodeGroup: map[string][]string{}}
		for _, g := range byGroup {
			n.ByNodeGroup[g] = []string{"some reason"}
		}
		return &scaleup.Plan{NoScaleUp: []scaleup.NoScaleUp{n}}
	}
	avoided := map[string]bool{"spot": true}
	for _, tc := range []struct {
		name    string
		plan    *scaleup.Plan
		avoided map[string]bool
		again   bool
	}{
		{"every pod helped by another group: the spot group stays avoided", &scaleup.Plan{}, avoided, false},
		{"no plan", nil, avoided, false},
		{"pods left that the avoided group could not take for its backoff: decide again with it", left("spot", "od", "failed"), avoided, true},
		{"pods left, but the avoided group was not asked (other pod groups' reasons)", left("od", "failed"), avoided, false},
		{"no group avoided: a backoff for a failed launch stays", left("spot", "od", "failed"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, again := LastResort(groups, tc.plan, tc.avoided)
			if again != tc.again {
				t.Fatalf("again %v, want %v", again, tc.again)
			}
			var unavailable []string
			for _, g := range next {
				unavailable = append(unavailable, fmt.Sprintf("%s:%q", g.ID, g.Unavailable))
			}
			want := []string{`spot:"in backoff (spot)"`, `od:""`, `failed:"in backoff (stock-out)"`}
			if again {
				want[0] = `spot:""`
			}
			if diff := cmp.Diff(want, unavailable); diff != "" {
				t.Errorf("groups decided with (-want +got):\n%s", diff)
			}
			if groups[0].Unavailable == "" {
				t.Fatal("LastResort changed the groups it was given")
			}
		})
	}
}
