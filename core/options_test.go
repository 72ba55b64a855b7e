package core

import (
	"reflect"
	"testing"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

func TestTaintFlagsReachTheNodeLoop(t *testing.T) {
	o := config.NewOptions()
	o.Taints = config.TaintOptions{StartupTaints: []string{"a"}, IgnoreTaints: []string{"b"}, StatusTaints: []string{"c"}}
	got := OptionsFromConfig(o).Taints
	if want := (clusterstate.Taints{Startup: []string{"a", "b"}, Status: []string{"c"}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("taints %+v, want %+v (--ignore-taint is a startup taint)", got, want)
	}
}
