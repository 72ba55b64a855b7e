package benchgen

import (
	"bufio"
	"encoding/json"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Type metadata written in the YAML list.
func nodeType() metav1.TypeMeta { return metav1.TypeMeta{APIVersion: "v1", Kind: "Node"} }
func podType() metav1.TypeMeta  { return metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"} }
func rsType() metav1.TypeMeta   { return metav1.TypeMeta{APIVersion: rsAPIVersion, Kind: rsKind} }

// WriteYAML writes the cluster as one Kubernetes YAML List (apiVersion v1,
// kind List) holding the nodes, then the ReplicaSets, then the running and
// the pending pods, each with its apiVersion and kind. The first line is the
// canonical header as a YAML comment. Node groups are not Kubernetes objects
// and are not written. Items are encoded one at a time, so memory stays
// proportional to one object, not to the cluster.
func (c *Cluster) WriteYAML(w io.Writer) error {
	// bufio.Writer errors are sticky: the final Flush reports any of them.
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(c.Params.header())
	bw.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for _, n := range c.Nodes {
		item := *n
		item.TypeMeta = nodeType()
		if err := writeItem(bw, &item); err != nil {
			return err
		}
	}
	for _, rs := range c.ReplicaSets {
		item := *rs
		item.TypeMeta = rsType()
		if err := writeItem(bw, &item); err != nil {
			return err
		}
	}
	if err := writePods(bw, c.RunningPods); err != nil {
		return err
	}
	if err := writePods(bw, c.PendingPods); err != nil {
		return err
	}
	return bw.Flush()
}

// writePods writes every pod as a list item.
func writePods(bw *bufio.Writer, pods []*corev1.Pod) error {
	for _, p := range pods {
		item := *p
		item.TypeMeta = podType()
		if err := writeItem(bw, &item); err != nil {
			return err
		}
	}
	return nil
}

// writeItem writes obj as one element of a YAML block sequence.
func writeItem(bw *bufio.Writer, obj any) error {
	js, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	doc, err := yamlItem(nil, js)
	if err != nil {
		return err
	}
	_, err = bw.Write(doc)
	return err
}
