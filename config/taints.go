package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TaintOptions are Cluster Autoscaler's taint flags: taint keys the node
// loop treats as transient. Each flag may be repeated.
type TaintOptions struct {
	// IgnoreTaints is the older name of StartupTaints.
	IgnoreTaints  []string
	StartupTaints []string
	StatusTaints  []string
}

// AddFlags registers the taint flags.
func (o *TaintOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.StartupTaints, "startup-taint", o.StartupTaints, "A taint key that marks a node still starting: the node counts as upcoming, not ready, while it has the taint, and templates leave it out. Repeat for several.")
	fs.StringArrayVar(&o.IgnoreTaints, "ignore-taint", o.IgnoreTaints, "The same as --startup-taint (Cluster Autoscaler's older name).")
	fs.StringArrayVar(&o.StatusTaints, "status-taint", o.StatusTaints, "A taint key that keeps pods off a node for now: the node still counts as ready, and templates leave it out. Repeat for several.")
}

// Validate checks that every value is a taint key and that no key is both
// a startup and a status taint.
func (o *TaintOptions) Validate() error {
	var errs []error
	check := func(flag string, keys []string) {
		for _, k := range keys {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s=%q is not a taint key: %s", flag, k, strings.Join(msgs, "; ")))
			}
		}
	}
	check("--startup-taint", o.StartupTaints)
	check("--ignore-taint", o.IgnoreTaints)
	check("--status-taint", o.StatusTaints)
	for _, k := range o.StatusTaints {
		if slices.Contains(o.StartupTaints, k) || slices.Contains(o.IgnoreTaints, k) {
			errs = append(errs, fmt.Errorf("--status-taint=%q is also given as a startup taint: a node with it cannot be both ready and not", k))
		}
	}
	return errors.Join(errs...)
}
