package v1alpha1

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// How a quantity of the API may be written. Kubernetes' quantity parser
// (resource.ParseQuantity, which the API server's CEL quantity functions
// and every typed client's JSON decoding call) takes a time that grows
// faster than the size of a negative exponent: "1e-2000000" takes 0.2 s,
// "1e-2000000000" hours, and a long mantissa seconds. So every quantity
// field of the CRD (deploy/crd, bounded by internal/crdquantity in the
// generate step) and every quantity tidal decodes (UnmarshalChecked) is at
// most MaxQuantityLength characters long and matches QuantityPattern, whose
// exponent has at most 3 digits: 1e-999 to 1e999, far beyond what a
// Quantity holds (nano-units to about 9.2e18).
const (
	MaxQuantityLength = 64
	QuantityPattern   = `^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$`
)

// quantityRE is QuantityPattern compiled (regexp.Regexp is safe for
// concurrent use).
var quantityRE = regexp.MustCompile(QuantityPattern)

// CheckQuantity reports what is wrong with s as a quantity of the API, as
// the API server reports it for the CRD; nil when it is within bounds.
// Its time is linear in len(s).
func CheckQuantity(path *field.Path, s string) *field.Error {
	if utf8.RuneCountInString(s) > MaxQuantityLength { // as the API server counts
		return field.TooLong(path, "", MaxQuantityLength)
	}
	if !quantityRE.MatchString(s) {
		return field.Invalid(path, s, "should match '"+QuantityPattern+"'")
	}
	return nil
}

// UnmarshalChecked decodes the JSON data into the value into points to, as
// the API server's clients do (case-sensitively), checking with
// CheckQuantity every string or number bound for a resource.Quantity before
// it is parsed, and with CheckDuration every duration field. A value out of
// bounds is left out, as if absent, and reported at its path under root;
// err is any other decoding error.
func UnmarshalChecked(data []byte, into any, root *field.Path) (refused field.ErrorList, err error) {
	var generic any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // a number keeps its literal, which Quantity parses too
	if err := d.Decode(&generic); err != nil {
		return nil, err
	}
	if refused, _ = checkValue(root, reflect.TypeOf(into), generic); len(refused) > 0 {
		if data, err = json.Marshal(generic); err != nil {
			return nil, err
		}
	}
	return refused, kjson.UnmarshalCaseSensitivePreserveInts(data, into)
}

// checkValue checks v, decoded from the JSON of a Go value of type t, and
// reports whether v is itself a refused quantity, for its container to drop.
// Refused quantities deeper down are dropped from v.
func checkValue(path *field.Path, t reflect.Type, v any) (field.ErrorList, bool) {
	if t == nil {
		return nil, false // into is nil: the decoder says so
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[resource.Quantity]() {
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case json.Number:
			s = v.String()
		default:
			return nil, false // not a quantity's JSON: the decoder refuses it
		}
		if err := CheckQuantity(path, s); err != nil {
			return field.ErrorList{err}, true
		}
		return nil, false
	}
	var errs field.ErrorList
	switch t.Kind() {
	case reflect.Struct:
		if m, ok := v.(map[string]any); ok {
			errs = checkFields(path, t, m)
		}
	case reflect.Slice, reflect.Array:
		l, _ := v.([]any)
		for i := range l {
			e, refused := checkValue(path.Index(i), t.Elem(), l[i])
			errs = append(errs, e...)
			if refused {
				l[i] = nil
			}
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			e, refused := checkValue(path.Key(k), t.Elem(), m[k])
			errs = append(errs, e...)
			if refused {
				delete(m, k)
			}
		}
	}
	return errs, false
}

// checkFields checks the JSON object m of the struct type t, field by field
// as encoding/json maps them (an embedded struct without a name inline).
func checkFields(path *field.Path, t reflect.Type, m map[string]any) field.ErrorList {
	var errs field.ErrorList
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case name == "-" || (!f.IsExported() && !f.Anonymous):
		case name == "" && f.Anonymous && ft.Kind() == reflect.Struct:
			errs = append(errs, checkFields(path, ft, m)...)
		default:
			if name == "" {
				name = f.Name
			}
			v, ok := m[name]
			if !ok {
				continue
			}
			var e field.ErrorList
			var refused bool
			if ft == durationType {
				e, refused = checkDuration(path.Child(name), f, v)
			} else {
				e, refused = checkValue(path.Child(name), f.Type, v)
			}
			errs = append(errs, e...)
			if refused {
				delete(m, name)
			}
		}
	}
	return errs
}
