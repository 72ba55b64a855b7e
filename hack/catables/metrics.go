package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// caMetric is a family of CA's metrics/metrics.go.
type caMetric struct {
	Name, Type string
	Labels     []string
	Buckets    []float64
	// PerNodeGroup: registered only with --emit-per-nodegroup-metrics.
	PerNodeGroup bool
	// Deprecated is the release CA deprecates the family in, if any.
	Deprecated string
}

var metricTypes = map[string]string{
	"NewGauge": "gauge", "NewGaugeVec": "gauge", "NewCounter": "counter", "NewCounterVec": "counter",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram", "NewSummary": "summary", "NewSummaryVec": "summary",
}

// metricsOf reads the families metrics.go defines and RegisterAll
// registers, by the field of caMetrics that holds each.
func metricsOf(l *loader) ([]caMetric, error) {
	p, err := l.load("metrics")
	if err != nil {
		return nil, err
	}
	byField := map[string]caMetric{}
	var errs []string
	for _, f := range p.files {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			call, ok := kv.Value.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || metricTypes[sel.Sel.Name] == "" {
				return true
			}
			m, err := l.metricOf(call, metricTypes[sel.Sel.Name], scope{file: f})
			if err != nil {
				errs = append(errs, err.Error())
				return false
			}
			byField[types.ExprString(kv.Key)] = m
			return false
		})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("metrics:\n  %s", strings.Join(errs, "\n  "))
	}
	return registered(p, byField)
}

// registered keeps the families RegisterAll registers, marking those it
// registers only under emitPerNodeGroupMetrics.
func registered(p *pkg, byField map[string]caMetric) ([]caMetric, error) {
	var reg *ast.FuncDecl
	for _, f := range p.files {
		for _, d := range f.ast.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "RegisterAll" {
				reg = fd
			}
		}
	}
	if reg == nil {
		return nil, fmt.Errorf("metrics: no RegisterAll method")
	}
	var out []caMetric
	var walk func(stmts []ast.Stmt, perGroup bool) error
	walk = func(stmts []ast.Stmt, perGroup bool) error {
		for _, st := range stmts {
			switch st := st.(type) {
			case *ast.IfStmt:
				if types.ExprString(st.Cond) != "emitPerNodeGroupMetrics" || st.Else != nil {
					return fmt.Errorf("RegisterAll: a condition the generator does not know: %s", types.ExprString(st.Cond))
				}
				if err := walk(st.Body.List, true); err != nil {
					return err
				}
			case *ast.ExprStmt:
				call, ok := st.X.(*ast.CallExpr)
				if !ok || !strings.HasSuffix(types.ExprString(call.Fun), "mustRegister") {
					return fmt.Errorf("RegisterAll: a statement the generator does not know: %s", types.ExprString(st.X))
				}
				for _, a := range call.Args {
					m, ok := byField[strings.TrimPrefix(types.ExprString(a), "m.")]
					if !ok {
						return fmt.Errorf("RegisterAll registers %s, not defined in metrics.go", types.ExprString(a))
					}
					m.PerNodeGroup = perGroup
					out = append(out, m)
				}
			default:
				return fmt.Errorf("RegisterAll: a statement the generator does not know")
			}
		}
		return nil
	}
	if err := walk(reg.Body.List, false); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b caMetric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// metricOf reads one family from its constructor call: the options
// literal and, for vectors, the label names.
func (l *loader) metricOf(call *ast.CallExpr, typ string, s scope) (caMetric, error) {
	m := caMetric{Type: typ}
	opts, ok := call.Args[0].(*ast.UnaryExpr)
	if !ok {
		return m, fmt.Errorf("%s: options are not &Opts{...}", l.text(call))
	}
	lit := opts.X.(*ast.CompositeLit)
	var ns, sub, name string
	for _, el := range lit.Elts {
		kv := el.(*ast.KeyValueExpr)
		key := kv.Key.(*ast.Ident).Name
		switch key {
		case "Help", "MaxAge", "StabilityLevel", "ConstLabels", "AgeBuckets", "BufCap", "Objectives":
			continue
		case "Buckets":
			b, err := l.buckets(kv.Value, s)
			if err != nil {
				return m, err
			}
			m.Buckets = b
			continue
		}
		v, err := l.eval(kv.Value, s)
		if err != nil {
			return m, err
		}
		switch key {
		case "Namespace":
			ns = constant.StringVal(v)
		case "Subsystem":
			sub = constant.StringVal(v)
		case "Name":
			name = constant.StringVal(v)
		case "DeprecatedVersion":
			m.Deprecated = constant.StringVal(v)
		default:
			return m, fmt.Errorf("%s: option %s the generator does not know", l.text(call), key)
		}
	}
	m.Name = prometheus.BuildFQName(ns, sub, name)
	if typ == "histogram" && m.Buckets == nil {
		m.Buckets = prometheus.DefBuckets
	}
	if len(call.Args) > 1 {
		labels, ok := call.Args[1].(*ast.CompositeLit)
		if !ok {
			return m, fmt.Errorf("%s: labels are not a []string literal", m.Name)
		}
		for _, el := range labels.Elts {
			v, err := l.eval(el, s)
			if err != nil {
				return m, err
			}
			m.Labels = append(m.Labels, constant.StringVal(v))
		}
	}
	return m, nil
}

// buckets computes a histogram's buckets with Prometheus' client, whose
// functions component-base's metrics wrap.
func (l *loader) buckets(e ast.Expr, s scope) ([]float64, error) {
	if lit, ok := e.(*ast.CompositeLit); ok {
		var out []float64
		for _, el := range lit.Elts {
			v, err := l.eval(el, s)
			if err != nil {
				return nil, err
			}
			f, _ := constant.Float64Val(constant.ToFloat(v))
			out = append(out, f)
		}
		return out, nil
	}
	if sel, ok := e.(*ast.SelectorExpr); ok && sel.Sel.Name == "DefBuckets" {
		return prometheus.DefBuckets, nil
	}
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return nil, fmt.Errorf("buckets %s: the generator does not know them", l.text(e))
	}
	var args []float64
	for _, a := range call.Args {
		v, err := l.eval(a, s)
		if err != nil {
			return nil, err
		}
		f, _ := constant.Float64Val(constant.ToFloat(v))
		args = append(args, f)
	}
	fn := call.Fun.(*ast.SelectorExpr).Sel.Name
	switch {
	case fn == "ExponentialBuckets" && len(args) == 3:
		return prometheus.ExponentialBuckets(args[0], args[1], int(args[2])), nil
	case fn == "ExponentialBucketsRange" && len(args) == 3:
		return prometheus.ExponentialBucketsRange(args[0], args[1], int(args[2])), nil
	case fn == "LinearBuckets" && len(args) == 3:
		return prometheus.LinearBuckets(args[0], args[1], int(args[2])), nil
	}
	return nil, fmt.Errorf("buckets %s: the generator does not know them", l.text(e))
}
