package podloop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/tidal-autoscaler/tidal/deploy"
)

// How least privilege is proven. The scenario's requests, as the API
// server's audit log recorded them, are authorized again by Kubernetes' own
// RBAC authorizer over the cluster's roles and bindings with deploy/'s roles
// changed: first unchanged (every request must be allowed, as the API server
// allowed it: the replay is faithful), then with one rule taken out at a
// time (some request must be denied: no rule is there for nothing), then
// with one verb of one resource of a rule taken out at a time (the same,
// except for the few permissions that only an error path uses, named in
// errorPathOnly with the reason).

// errorPathOnly are permissions the scenario cannot be expected to use: a
// fresh read after a write lost to a conflict.
var errorPathOnly = map[string]string{
	"get autoscaling.tidal.dev/podautoscalers":   "re-read after a status update conflicts",
	"get autoscaling/horizontalpodautoscalers":   "re-read after a status update conflicts",
	"patch autoscaling/horizontalpodautoscalers": "the history annotation, where a status update did not keep it",
}

// auditSize is the audit log's current length: readAudit reads from there.
func auditSize(t *testing.T) int64 {
	t.Helper()
	st, err := os.Stat(auditLog(t))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// readAudit returns the audit events of user logged after offset from.
func readAudit(t *testing.T, from int64, username string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(auditLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		t.Fatal(err)
	}
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		if ev.User.Username == username {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no request of %s in the audit log", username)
	}
	return out
}

// checkLeastPrivilege checks the audited requests against the roles of objs.
func checkLeastPrivilege(t *testing.T, objs []*unstructured.Unstructured, events []auditv1.Event) {
	for _, ev := range events {
		if ev.Annotations["authorization.k8s.io/decision"] != "allow" {
			t.Errorf("forbidden: %s %s (%s)", ev.Verb, ev.RequestURI, ev.Annotations["authorization.k8s.io/reason"])
		}
	}
	requests := distinctRequests(events)
	t.Logf("%d requests of tidal, %d distinct", len(events), len(requests))
	clusterRole := roleRules[rbacv1.ClusterRole](t, deploy.Find(objs, "ClusterRole", "tidal"))
	role := roleRules[rbacv1.Role](t, deploy.Find(objs, "Role", "tidal"))
	rp := newReplay(t)
	if denied := rp.denied(requests, clusterRole.Rules, role.Rules); len(denied) > 0 {
		t.Fatalf("the replay denies what the API server allowed: %v", denied)
	}
	for i, r := range clusterRole.Rules {
		if len(rp.denied(requests, without(clusterRole.Rules, i), role.Rules)) == 0 {
			t.Errorf("ClusterRole rule %d %s: nothing fails without it", i, ruleString(r))
		}
	}
	for i, r := range role.Rules {
		if len(rp.denied(requests, clusterRole.Rules, without(role.Rules, i))) == 0 {
			t.Errorf("Role rule %d %s: nothing fails without it", i, ruleString(r))
		}
	}
	for _, a := range atoms(clusterRole.Rules) {
		checkAtom(t, "ClusterRole", a, func(rules []rbacv1.PolicyRule) []string {
			return rp.denied(requests, rules, role.Rules)
		}, clusterRole.Rules)
	}
	for _, a := range atoms(role.Rules) {
		checkAtom(t, "Role", a, func(rules []rbacv1.PolicyRule) []string {
			return rp.denied(requests, clusterRole.Rules, rules)
		}, role.Rules)
	}
}

// roleRules converts a ClusterRole or Role object.
func roleRules[T rbacv1.ClusterRole | rbacv1.Role](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	if o == nil {
		t.Fatal("deploy/base has no such role")
	}
	var r T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// distinctRequests turns the events into authorization attributes, once
// each, as the API server derived them from the request.
func distinctRequests(events []auditv1.Event) []authorizer.AttributesRecord {
	seen := map[string]bool{}
	var out []authorizer.AttributesRecord
	for _, ev := range events {
		a := attributes(ev)
		key := fmt.Sprintf("%s %s %s/%s/%s/%s %s %s", a.Verb, a.Namespace, a.APIGroup, a.Resource, a.Subresource, a.Name, a.Path, strings.Join(a.User.GetGroups(), ","))
		if !seen[key] {
			seen[key] = true
			out = append(out, a)
		}
	}
	return out
}

func attributes(ev auditv1.Event) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: ev.User.Username, UID: ev.User.UID, Groups: ev.User.Groups},
		Verb: ev.Verb,
	}
	if ev.ObjectRef == nil {
		u, err := url.Parse(ev.RequestURI)
		if err == nil {
			a.Path = u.Path
		}
		return a
	}
	r := ev.ObjectRef
	a.ResourceRequest = true
	a.Namespace, a.APIGroup, a.APIVersion = r.Namespace, r.APIGroup, r.APIVersion
	a.Resource, a.Subresource, a.Name = r.Resource, r.Subresource, r.Name
	if ev.Verb == "create" && r.Subresource == "" {
		a.Name = "" // the log names the created object; its authorization did not
	}
	return a
}

// replay authorizes requests with the cluster's roles and bindings, tidal's
// two roles replaced.
type replay struct {
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
}

func newReplay(t *testing.T) *replay {
	t.Helper()
	ctx := context.Background()
	rb := cluster(t).Client.RbacV1()
	crs, err := rb.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crbs, err := rb.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rb.Roles("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rbs, err := rb.RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &replay{clusterRoles: ptrs(crs.Items), clusterRoleBindings: ptrs(crbs.Items), roles: ptrs(rs.Items), roleBindings: ptrs(rbs.Items)}
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// denied lists the requests the RBAC authorizer denies when tidal's
// ClusterRole and Role have the given rules.
func (r *replay) denied(requests []authorizer.AttributesRecord, clusterRules, roleRules []rbacv1.PolicyRule) []string {
	crs := slices.Clone(r.clusterRoles)
	for i, cr := range crs {
		if cr.Name == "tidal" {
			c := cr.DeepCopy()
			c.Rules = clusterRules
			crs[i] = c
		}
	}
	rs := slices.Clone(r.roles)
	for i, ro := range rs {
		if ro.Namespace == "kube-system" && ro.Name == "tidal" {
			c := ro.DeepCopy()
			c.Rules = roleRules
			rs[i] = c
		}
	}
	_, static := rbacvalidation.NewTestRuleResolver(rs, r.roleBindings, crs, r.clusterRoleBindings)
	authz := rbac.New(static, static, static, static)
	var out []string
	for _, a := range requests {
		d, _, _ := authz.Authorize(context.Background(), a)
		if d != authorizer.DecisionAllow {
			out = append(out, requestString(a))
		}
	}
	return out
}

// atom is one verb on one resource of one API group of a rule.
type atom struct {
	rule                  int
	group, resource, verb string
	resourceNames         []string
}

func (a atom) String() string {
	s := a.verb + " " + a.resource
	if a.group != "" {
		s = a.verb + " " + a.group + "/" + a.resource
	}
	if len(a.resourceNames) > 0 {
		s += " named " + strings.Join(a.resourceNames, ",")
	}
	return s
}

func atoms(rules []rbacv1.PolicyRule) []atom {
	var out []atom
	for i, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, atom{rule: i, group: g, resource: res, verb: v, resourceNames: r.ResourceNames})
				}
			}
		}
	}
	return out
}

// withoutAtom is rules with a's rule split into its other atoms.
func withoutAtom(rules []rbacv1.PolicyRule, a atom) []rbacv1.PolicyRule {
	out := without(rules, a.rule)
	for _, o := range atoms(rules[a.rule : a.rule+1]) {
		if o.group != a.group || o.resource != a.resource || o.verb != a.verb {
			out = append(out, rbacv1.PolicyRule{APIGroups: []string{o.group}, Resources: []string{o.resource},
				Verbs: []string{o.verb}, ResourceNames: o.resourceNames})
		}
	}
	return out
}

// checkAtom fails the test when nothing of requests is denied without a
// (deny is the replay with a's rules changed), unless a is excused.
func checkAtom(t *testing.T, kind string, a atom, deny func([]rbacv1.PolicyRule) []string, rules []rbacv1.PolicyRule) {
	t.Helper()
	denied := deny(withoutAtom(rules, a))
	_, excused := errorPathOnly[a.String()]
	switch {
	case len(denied) == 0 && !excused:
		t.Errorf("%s: %q is not used by the scenario", kind, a)
	case len(denied) > 0 && excused:
		t.Logf("%s: %q, listed as used only on error paths, was used by: %v", kind, a, denied)
	}
}

// without is rules without rule i.
func without(rules []rbacv1.PolicyRule, i int) []rbacv1.PolicyRule {
	return append(slices.Clone(rules[:i]), rules[i+1:]...)
}

func ruleString(r rbacv1.PolicyRule) string {
	s := fmt.Sprintf("%v %v %v", r.APIGroups, r.Resources, r.Verbs)
	if len(r.ResourceNames) > 0 {
		s += fmt.Sprintf(" named %v", r.ResourceNames)
	}
	return s
}

func requestString(a authorizer.AttributesRecord) string {
	if !a.ResourceRequest {
		return a.Verb + " " + a.Path
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.APIGroup != "" {
		res = a.APIGroup + "/" + res
	}
	s := a.Verb + " " + res
	if a.Namespace != "" {
		s += " in " + a.Namespace
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	return s
}
