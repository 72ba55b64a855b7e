package nodeopts

import (
	"reflect"
	"testing"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

func TestTaintFlagsReachTheNodeLoop(t *testing.T) {
	o := config.NewOptions()
	o.Taints = config.TaintOptions{StartupTaints: []string{"a"}, IgnoreTaints: []string{"b"}, StatusTaints: []string{"c"}}
	got := FromConfig(o).Taints
	if want := (clusterstate.Taints{Startup: []string{"a", "b"}, Status: []string{"c"}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("taints %+v, want %+v (--ignore-taint is a startup taint)", got, want)
	}
}

// The scale-down flags of Cluster Autoscaler reach the node loop, with
// CA's defaults.
func TestScaleDownCAFlagsReachTheNodeLoop(t *testing.T) {
	o := config.NewOptions()
	sd := FromConfig(o).ScaleDown
	if !sd.UnreadyEnabled || sd.GPUUtilizationThreshold != 0.5 || sd.NonEmptyCandidatesCount != 0 || sd.IgnoreDaemonSetsUtilization {
		t.Fatalf("defaults %+v: want unready nodes removed, GPU threshold 0.5, no limit of non-empty candidates, DaemonSets counted", sd)
	}
	o.ScaleDown.UnreadyEnabled, o.ScaleDown.GPUUtilizationThreshold, o.ScaleDown.NonEmptyCandidatesCount = false, 0.2, 5
	sd = FromConfig(o).ScaleDown
	if sd.UnreadyEnabled || sd.GPUUtilizationThreshold != 0.2 || sd.NonEmptyCandidatesCount != 5 {
		t.Fatalf("options %+v: flags not taken", sd)
	}
}

// --scale-up-placement reaches the node loop, plan by default.
func TestScaleUpPlacementReachesTheNodeLoop(t *testing.T) {
	o := config.NewOptions()
	if got := FromConfig(o).ScaleUpPlacement; got != scaleup.PlacementPlan {
		t.Fatalf("default placement %q, want %q", got, scaleup.PlacementPlan)
	}
	o.ScaleUp.ScaleUpPlacement = "scheduler"
	if got := FromConfig(o).ScaleUpPlacement; got != scaleup.PlacementScheduler {
		t.Fatalf("placement %q, want %q", got, scaleup.PlacementScheduler)
	}
}
