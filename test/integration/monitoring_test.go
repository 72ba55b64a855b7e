package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/deploy"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// A real Prometheus server scrapes tidal through a scale-up and a
// scale-down; CA's families then tell what happened, and Prometheus
// evaluates deploy/monitoring's rules: every rule loads and
// evaluates without error, the series tidal's alerts read exist, and every
// query of the Grafana dashboard returns data. (The PodAutoscaler alerts
// read kube-state-metrics' series, which no one makes here: they are only
// loaded and evaluated; deploy's tests check them against its
// configuration.)
func TestMonitoringRulesAndDashboardReadTidal(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "mon-")
	ns := newNamespace(t)
	groups := writeGroups(t, "nodeGroups:\n- {name: mon-a, minSize: 1, maxSize: 4, zone: z, cpu: '2', memory: 4Gi, provisioningDelay: 500ms}\n")
	tl := startTidal(t, append(scaleDownFlags, "--local-node-groups="+groups, "--emit-per-nodegroup-metrics")...)
	prom := testenv.StartPrometheus(t, []string{tl.Address}, ruleFile(t, "prometheusrule.yaml"), ruleFile(t, "podautoscaler-rules.yaml"))
	failed := func() { t.Logf("Prometheus' log:\n%s", prom.Log()) }

	// Scale-up: 3 pods of 1.5 CPU need 3 nodes of 2 CPU.
	createDeployment(t, deployment(ns, "web", 3, "1500m", "1Gi"))
	waitRunning(t, ns, "web", 3, 90*time.Second)
	waitPromValue(t, prom, `cluster_autoscaler_scaled_up_nodes_total`, 2, failed)
	// Scale-down: without the pods the group goes back to its min size.
	if err := cluster(t).Client.AppsV1().Deployments(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete deployment: %v", err)
	}
	poll(t, 90*time.Second, "mon-a back to 1 node", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "mon-a")
		return len(nodes) == 1, err
	})
	waitPromValue(t, prom, `sum(cluster_autoscaler_scaled_down_nodes_total)`, 2, failed)
	checkCAValues(t, prom, failed)

	rules, err := deploy.RuleGroups("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paRules, err := deploy.RuleGroups("podautoscaler-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := checkRulesEvaluated(t, prom, failed); n != len(rules[0].Rules)+len(paRules[0].Rules) {
		t.Fatalf("Prometheus evaluated %d rules, deploy/monitoring has %d", n, len(rules[0].Rules)+len(paRules[0].Rules))
	}
	selector := regexp.MustCompile(`\b(?:cluster_autoscaler|tidal)_[a-z0-9_]+(?:\{[^}]*\})?`)
	for _, r := range rules[0].Rules {
		sels := selector.FindAllString(r.Expr, -1)
		if len(sels) == 0 {
			t.Errorf("alert %s reads none of tidal's series: %s", r.Alert, r.Expr)
		}
		for _, sel := range sels {
			if v := promQuery(t, prom, "count("+sel+")"); len(v) == 0 {
				t.Errorf("alert %s reads %s, which has no series", r.Alert, sel)
			}
		}
	}
	queries, err := deploy.DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if v := promQuery(t, prom, q.Expr); len(v) == 0 {
			t.Errorf("dashboard panel %q query %s returns no data: %s", q.Panel, q.RefID, q.Expr)
		}
	}
	if t.Failed() {
		failed()
	}
}

// checkCAValues checks that CA's families, as Prometheus scraped them, tell
// what happened: one group of sizes 1 to 4 back at 1 node after 2 were
// added and removed, CA's counters agreeing with tidal's per group ones.
func checkCAValues(t *testing.T, prom *testenv.Prometheus, failed func()) {
	t.Helper()
	want := map[string]float64{
		`cluster_autoscaler_node_groups_count{node_group_type="autoscaled"}`:                                                                     1,
		`cluster_autoscaler_max_nodes_count`:                                                                                                     4,
		`cluster_autoscaler_node_group_min_count{node_group="mon-a"}`:                                                                            1,
		`cluster_autoscaler_node_group_max_count{node_group="mon-a"}`:                                                                            4,
		`cluster_autoscaler_node_group_target_count{node_group="mon-a"}`:                                                                         1,
		`cluster_autoscaler_node_group_healthiness{node_group="mon-a"}`:                                                                          1,
		`cluster_autoscaler_node_group_backoff_status{node_group="mon-a"}`:                                                                       0,
		`sum(cluster_autoscaler_scaled_down_nodes_total)`:                                                                                        2,
		`sum(cluster_autoscaler_scaled_up_nodes_total) - sum(tidal_scaled_up_nodes_total)`:                                                       0,
		`sum(cluster_autoscaler_failed_scale_ups_total)`:                                                                                         0,
		`cluster_autoscaler_last_activity{activity="scaleDown"} >= bool ignoring(activity) cluster_autoscaler_last_activity{activity="scaleUp"}`: 1,
		`cluster_autoscaler_cluster_safe_to_autoscale`:                                                                                           1,
	}
	got := map[string]float64{}
	defer func() {
		if t.Failed() {
			t.Logf("values: %v", got)
			failed()
		}
	}()
	poll(t, 30*time.Second, "CA's families to tell what happened", func(ctx context.Context) (bool, error) {
		for expr, w := range want {
			v, _, err := prom.API.Query(ctx, expr, time.Now())
			if err != nil {
				return false, fmt.Errorf("query %s: %w", expr, err)
			}
			vec, _ := v.(model.Vector)
			if len(vec) != 1 {
				return false, fmt.Errorf("%s: %d series, want 1", expr, len(vec))
			}
			if got[expr] = float64(vec[0].Value); got[expr] != w {
				return false, fmt.Errorf("%s = %v, want %v", expr, got[expr], w)
			}
		}
		return true, nil
	})
}

// ruleFile writes the rule groups of a PrometheusRule of deploy/monitoring
// as a Prometheus rules file.
func ruleFile(t *testing.T, name string) string {
	t.Helper()
	groups, err := deploy.RuleGroups(name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// promQuery is the instant vector expr evaluates to now.
func promQuery(t *testing.T, prom *testenv.Prometheus, expr string) model.Vector {
	t.Helper()
	v, _, err := prom.API.Query(context.Background(), expr, time.Now())
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %s: a %s, want a vector", expr, v.Type())
	}
	return vec
}

// waitPromValue waits until Prometheus has scraped expr at least at want.
func waitPromValue(t *testing.T, prom *testenv.Prometheus, expr string, want float64, failed func()) {
	t.Helper()
	defer func() {
		if t.Failed() {
			failed()
		}
	}()
	poll(t, 60*time.Second, fmt.Sprintf("Prometheus to see %s >= %v", expr, want), func(ctx context.Context) (bool, error) {
		v, _, err := prom.API.Query(ctx, expr, time.Now())
		if err != nil {
			return false, err
		}
		vec, _ := v.(model.Vector)
		return len(vec) == 1 && float64(vec[0].Value) >= want, nil
	})
}

// checkRulesEvaluated waits until Prometheus has evaluated every rule it
// loaded, fails for each that is unhealthy, and returns how many there are.
func checkRulesEvaluated(t *testing.T, prom *testenv.Prometheus, failed func()) int {
	t.Helper()
	var rules []promv1.AlertingRule
	poll(t, 30*time.Second, "every rule evaluated", func(ctx context.Context) (bool, error) {
		res, err := prom.API.Rules(ctx)
		if err != nil {
			return false, err
		}
		rules = rules[:0]
		for _, g := range res.Groups {
			for _, r := range g.Rules {
				a, ok := r.(promv1.AlertingRule)
				if !ok {
					return false, fmt.Errorf("rule %v of %s is no alerting rule", r, g.Name)
				}
				if a.LastEvaluation.IsZero() {
					return false, nil
				}
				rules = append(rules, a)
			}
		}
		return len(rules) > 0, nil
	})
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
		if r.Health != promv1.RuleHealthGood || r.LastError != "" {
			t.Errorf("rule %s: health %s, error %q", r.Name, r.Health, r.LastError)
		}
	}
	if t.Failed() {
		failed()
	}
	t.Logf("rules evaluated: %s", strings.Join(names, ", "))
	return len(rules)
}
