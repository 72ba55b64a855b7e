package externalgrpc

import (
	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// checkNodeQuantities checks, before Kubernetes' protobuf code parses them,
// the quantities of a Node in its protobuf encoding: status.capacity and
// status.allocatable (Node field 3, NodeStatus fields 1 and 2, each a map
// of name to Quantity, whose field 1 is the string), the only quantities a
// Node has. Kubernetes' parser takes hours on a quantity such as
// "1e-2000000000", so each is held to the bounds of v1alpha1.CheckQuantity
// first. Wire errors are left to the decoder.
func checkNodeQuantities(b []byte) error {
	status := field.NewPath("status")
	for _, s := range fieldsOf(b, 3) {
		for num, name := range []string{1: "capacity", 2: "allocatable"} {
			if name == "" {
				continue
			}
			for _, entry := range fieldsOf(s, protowire.Number(num)) {
				key := ""
				for _, k := range fieldsOf(entry, 1) {
					key = string(k)
				}
				for _, q := range fieldsOf(entry, 2) {
					for _, str := range fieldsOf(q, 1) {
						if err := v1alpha1.CheckQuantity(status.Child(name).Key(key), string(str)); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// fieldsOf returns the bytes of every length-delimited field num of the
// message b (nothing past a wire error).
func fieldsOf(b []byte, num protowire.Number) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return out
		}
		b = b[l:]
		if typ == protowire.BytesType && n == num {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return out
			}
			out = append(out, v)
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return out
		}
		b = b[m:]
	}
	return out
}
