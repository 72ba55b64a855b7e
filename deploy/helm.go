package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// RenderChart renders the Helm chart in dir as `helm template` does for a
// release of the name in namespace with values over the chart's own, and
// returns its objects: the CRDs of crds/ first, then the templates'.
func RenderChart(dir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, files, err := renderFiles(dir, release, namespace, values)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objs, err := decodeYAML(crd.Filename, crd.File.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if path.Ext(name) == ".yaml" || path.Ext(name) == ".yml" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		objs, err := decodeYAML(name, []byte(files[name]))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetNamespace() == "" && namespaced(o.GetKind()) {
				o.SetNamespace(namespace)
			}
		}
		out = append(out, objs...)
	}
	return out, nil
}

// RenderNotes renders the chart's NOTES.txt, which helm prints after an
// install.
func RenderNotes(dir, release, namespace string, values map[string]any) (string, error) {
	ch, files, err := renderFiles(dir, release, namespace, values)
	if err != nil {
		return "", err
	}
	return files[path.Join(ch.Name(), "templates", "NOTES.txt")], nil
}

// renderFiles renders the chart's templates as `helm template` does,
// validating the values against the chart's schema.
func renderFiles(dir, release, namespace string, values map[string]any) (*chartv2.Chart, map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	vals, err := chartutil.ToRenderValues(ch, values,
		common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("values of chart %s: %w", dir, err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, nil, fmt.Errorf("render chart %s: %w", dir, err)
	}
	return ch, files, nil
}

// namespaced tells the kinds of the chart that live in a namespace.
func namespaced(kind string) bool {
	switch kind {
	case "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace", "PriorityClass",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return false
	}
	return true
}

// decodeYAML decodes the documents of a YAML stream, skipping empty ones.
func decodeYAML(name string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetKind() == "" {
			return nil, fmt.Errorf("%s: a document without kind", name)
		}
		out = append(out, o)
	}
}

// MergeValues lays over on base as helm lays a later -f file over an
// earlier one: maps merge key by key, anything else is replaced. Neither
// argument is changed.
func MergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		b, bok := out[k].(map[string]any)
		o, ook := v.(map[string]any)
		if bok && ook {
			out[k] = MergeValues(b, o)
			continue
		}
		out[k] = v
	}
	return out
}

// CAChartValues is Cluster Autoscaler's chart's own values.yaml (testdata,
// as its chart ships it) with user's values laid over, as helm lays a
// user's -f file over a chart's defaults: the values a user of Cluster
// Autoscaler's chart installs with.
func CAChartValues(user map[string]any) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(Dir(), "testdata", "cluster-autoscaler-chart-values.yaml"))
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("Cluster Autoscaler's chart's values: %w", err)
	}
	return MergeValues(v, user), nil
}
