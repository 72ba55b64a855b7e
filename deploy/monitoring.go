package deploy

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// RuleGroup is a group of Prometheus rules as a PrometheusRule's
// spec.groups and a Prometheus rules file both hold it.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is an alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RuleGroups reads the rule groups of the PrometheusRule in file, a name
// under deploy/monitoring.
func RuleGroups(file string) ([]RuleGroup, error) {
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []RuleGroup `json:"groups"`
		} `json:"spec"`
	}
	if err := readStrict(filepath.Join(Dir(), "monitoring", file), &pr, false); err != nil {
		return nil, err
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		return nil, fmt.Errorf("%s: want a PrometheusRule with rule groups, got kind %q with %d groups", file, pr.Kind, len(pr.Spec.Groups))
	}
	return pr.Spec.Groups, nil
}

// PanelQuery is one query of a dashboard panel.
type PanelQuery struct {
	Panel, RefID, Expr string
}

// DashboardQueries reads the queries of every panel of the Grafana
// dashboard deploy/monitoring/tidal-dashboard.json.
func DashboardQueries() ([]PanelQuery, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := readStrict(filepath.Join(Dir(), "monitoring", "tidal-dashboard.json"), &d, false); err != nil {
		return nil, err
	}
	var qs []PanelQuery
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			return nil, fmt.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, t := range p.Targets {
			qs = append(qs, PanelQuery{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	return qs, nil
}

// readStrict decodes the YAML or JSON file into v; strict refuses fields v
// does not have.
func readStrict(file string, v any, strict bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if strict {
		err = yaml.UnmarshalStrict(data, v)
	} else {
		err = yaml.Unmarshal(data, v)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
