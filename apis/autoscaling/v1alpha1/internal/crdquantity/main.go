// Command crdquantity bounds every quantity field of a CRD manifest that
// controller-gen wrote: it gives each the pattern v1alpha1.QuantityPattern
// (an exponent of at most 3 digits, where controller-gen's pattern allows
// any) and the length v1alpha1.MaxQuantityLength, including the fields of
// autoscaling/v2's types, which carry no markers of tidal's. The manifest is
// rewritten in place, in controller-gen's format.
//
//	go run ./internal/crdquantity ../../../deploy/crd/autoscaling.tidal.dev_podautoscalers.yaml
package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// controllerGenPattern is the pattern controller-gen gives a
// resource.Quantity.
const controllerGenPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// header is what controller-gen writes before the manifest.
const header = "---\n"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdquantity CRD.yaml")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "crdquantity: %v\n", err)
		os.Exit(1)
	}
}

// rewrite bounds the quantities of the manifest at path.
func rewrite(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	n, err := bound(crd, "")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: no quantity field found", path)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	if out = append([]byte(header), out...); bytes.Equal(out, raw) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// bound bounds every quantity schema under v (at where, for messages) and
// returns how many it found. A quantity schema is an int-or-string with
// controller-gen's pattern (or the bounded one); an int-or-string with any
// other pattern is an error, so that a change of controller-gen's is seen.
func bound(v any, where string) (int, error) {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		if v["x-kubernetes-int-or-string"] == true {
			if p, ok := v["pattern"]; ok {
				if p != controllerGenPattern && p != v1alpha1.QuantityPattern {
					return 0, fmt.Errorf("%s: int-or-string with an unknown pattern %v", where, p)
				}
				v["pattern"] = v1alpha1.QuantityPattern
				v["maxLength"] = v1alpha1.MaxQuantityLength
				n++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			m, err := bound(v[k], where+"."+k)
			if err != nil {
				return 0, err
			}
			n += m
		}
	case []any:
		for i, e := range v {
			m, err := bound(e, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return 0, err
			}
			n += m
		}
	}
	return n, nil
}
