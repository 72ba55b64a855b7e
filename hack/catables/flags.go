package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/constant"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseconfig "k8s.io/component-base/config"
	componentopts "k8s.io/component-base/config/options"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // as CA's main.go: the JSON format's flags
	"k8s.io/klog/v2"
)

// caFlag is one command-line flag of CA: its name, its type as pflag names
// it (multiString for CA's repeatable MultiStringFlag) and its default as
// --help shows it.
type caFlag struct {
	Name, Type, Default string
	// From is where CA registers it: flags.go, or the library main.go
	// calls (klog, leader election, logging, feature gates).
	From string
}

// registration matches the flag and pflag functions that register a flag.
var registration = regexp.MustCompile(`^(String|Bool|Int|Int64|Int32|Uint|Uint64|Float64|Float32|Duration|StringSlice|StringArray|IntSlice)(Var)?(P)?$|^VarP?$`)

// helpers are CA's functions that register a flag of their own type.
var helpers = map[string]string{"multiStringFlag": "multiString"}

// flagsOf reads the flags CA's config/flags package registers.
func flagsOf(l *loader) ([]caFlag, error) {
	p, err := l.load("config/flags")
	if err != nil {
		return nil, err
	}
	var out []caFlag
	var errs []string
	for _, f := range p.files {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && helpers[fd.Name.Name] != "" {
				return false // the helper's own flag.Var takes its name as an argument
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fl, ok, err := l.flagOf(call, f)
			switch {
			case err != nil:
				errs = append(errs, err.Error())
			case ok:
				out = append(out, fl)
			}
			return true
		})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("config/flags:\n  %s", strings.Join(errs, "\n  "))
	}
	return out, nil
}

// flagOf tells whether call registers a flag, and which.
func (l *loader) flagOf(call *ast.CallExpr, f *file) (caFlag, bool, error) {
	s := scope{file: f}
	if id, ok := call.Fun.(*ast.Ident); ok {
		typ := helpers[id.Name]
		if typ == "" {
			return caFlag{}, false, nil
		}
		name, err := l.eval(call.Args[0], s)
		if err != nil {
			return caFlag{}, false, err
		}
		return caFlag{Name: constant.StringVal(name), Type: typ, Default: "[]", From: "flags.go"}, true, nil
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return caFlag{}, false, nil
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || (f.imports[x.Name] != "flag" && f.imports[x.Name] != "github.com/spf13/pflag") {
		return caFlag{}, false, nil
	}
	m := registration.FindStringSubmatch(sel.Sel.Name)
	if m == nil {
		return caFlag{}, false, nil
	}
	if m[1] == "" {
		return caFlag{}, false, fmt.Errorf("%s: a flag.Var of a type the generator does not know", l.text(call))
	}
	nameAt := 0
	if m[2] != "" {
		nameAt = 1 // XVar(&v, name, default, usage)
	}
	defAt := nameAt + 1
	if m[3] != "" {
		defAt++ // shorthand
	}
	name, err := l.eval(call.Args[nameAt], s)
	if err != nil {
		return caFlag{}, false, err
	}
	typ := lowerFirst(m[1])
	if runtimeDefault(call.Args[defAt], f) {
		return caFlag{Name: constant.StringVal(name), Type: typ, From: "flags.go, default set at run time"}, true, nil
	}
	def, err := l.defaultOf(call.Args[defAt], typ, s)
	if err != nil {
		return caFlag{}, false, fmt.Errorf("--%s: %w", constant.StringVal(name), err)
	}
	return caFlag{Name: constant.StringVal(name), Type: typ, Default: def, From: "flags.go"}, true, nil
}

// runtimeDefaults are CA's functions that compute a default at run time:
// each provider of a build sets the default provider in its init.
var runtimeDefaults = []string{caModule + "/cloudprovider/builder.DefaultCloudProvider"}

func runtimeDefault(e ast.Expr, f *file) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && slices.Contains(runtimeDefaults, f.imports[x.Name]+"."+sel.Sel.Name)
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// defaultOf renders a flag's default value as pflag shows it.
func (l *loader) defaultOf(e ast.Expr, typ string, s scope) (string, error) {
	if lit, ok := e.(*ast.CompositeLit); ok {
		var items []string
		for _, el := range lit.Elts {
			v, err := l.eval(el, s)
			if err != nil {
				return "", err
			}
			items = append(items, constant.StringVal(v))
		}
		return "[" + strings.Join(items, ",") + "]", nil
	}
	v, err := l.eval(e, s)
	if err != nil {
		return "", err
	}
	switch typ {
	case "duration":
		n, _ := constant.Int64Val(constant.ToInt(v))
		return time.Duration(n).String(), nil
	case "float64", "float32":
		x, _ := constant.Float64Val(constant.ToFloat(v))
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case "bool":
		return strconv.FormatBool(constant.BoolVal(v)), nil
	case "string":
		return constant.StringVal(v), nil
	}
	return constant.ToInt(v).ExactString(), nil
}

// libraryCalls are the calls of CA's main that register other libraries'
// flags; main.go must make each and no other.
var libraryCalls = []string{"klog.InitFlags", "componentopts.BindLeaderElectionFlags", "logsapi.AddFlags", "featureGate.AddFlag", "kube_flag.InitFlags"}

var flagSet = regexp.MustCompile(`\bflag\.Set\("([^"]+)", "([^"]*)"\)`)

var flagCall = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*\.[A-Za-z]*(?:Flags?|FlagSet)[A-Za-z]*)\(`)

// libraryFlags are the flags CA's main.go adds from other libraries,
// registered here as main.go does it: klog's (with underscores, as CA's
// kube_flag.InitFlags normalises them), the leader election's with CA's
// defaults, Kubernetes' logging flags and the feature gates.
func libraryFlags(l *loader) ([]caFlag, error) {
	data, err := l.src.readFile("main.go")
	if err != nil {
		return nil, err
	}
	var seen []string
	for _, m := range flagCall.FindAllStringSubmatch(string(data), -1) {
		seen = append(seen, m[1])
	}
	for _, c := range seen {
		if !slices.Contains(libraryCalls, c) && !strings.HasPrefix(c, "flags.") && !strings.HasPrefix(c, "pflag.CommandLine.") && c != "flag.Set" {
			return nil, fmt.Errorf("main.go calls %s, which the generator does not know: teach it which flags that adds", c)
		}
	}
	if !strings.Contains(string(data), `_ "k8s.io/component-base/logs/json/register"`) {
		return nil, fmt.Errorf("main.go no longer imports the JSON logging format: drop its import from the generator")
	}
	for _, c := range libraryCalls {
		if !slices.Contains(seen, c) {
			return nil, fmt.Errorf("main.go no longer calls %s: update the generator", c)
		}
	}
	le, err := leaderElection(l)
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("ca", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	for _, m := range flagSet.FindAllStringSubmatch(string(data), -1) {
		if err := gfs.Set(m[1], m[2]); err != nil {
			return nil, fmt.Errorf("main.go: flag.Set(%q, %q): %w", m[1], m[2], err)
		}
	}
	componentopts.BindLeaderElectionFlags(&le, fs)
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), fs)
	featuregate.NewFeatureGate().AddFlag(fs)
	fs.AddGoFlagSet(gfs)
	var out []caFlag
	fs.VisitAll(func(f *pflag.Flag) {
		// Value, not DefValue: main.go's flag.Set calls change klog's defaults.
		out = append(out, caFlag{Name: f.Name, Type: f.Value.Type(), Default: f.Value.String(), From: libraryOf(f.Name, gfs)})
	})
	return out, nil
}

func libraryOf(name string, klogFlags *flag.FlagSet) string {
	switch {
	case strings.HasPrefix(name, "leader-elect"):
		return "leader election"
	case name == "feature-gates":
		return "feature gates"
	case klogFlags.Lookup(strings.ReplaceAll(name, "-", "_")) != nil && name != "v" && name != "vmodule":
		return "klog"
	}
	return "logging"
}

// leaderElection is CA's leader election configuration, read from
// main.go's leaderElectionConfiguration.
func leaderElection(l *loader) (componentbaseconfig.LeaderElectionConfiguration, error) {
	var le componentbaseconfig.LeaderElectionConfiguration
	p, err := l.load(".")
	if err != nil {
		return le, err
	}
	fd, ok := p.funcs["leaderElectionConfiguration"]
	if !ok || len(fd.Body.List) != 1 {
		return le, fmt.Errorf("main.go: no leaderElectionConfiguration of one return")
	}
	lit, ok := fd.Body.List[0].(*ast.ReturnStmt).Results[0].(*ast.CompositeLit)
	if !ok {
		return le, fmt.Errorf("main.go: leaderElectionConfiguration returns no literal")
	}
	s := scope{file: p.fileOf[fd]}
	for _, el := range lit.Elts {
		kv := el.(*ast.KeyValueExpr)
		val := kv.Value
		if inner, ok := val.(*ast.CompositeLit); ok && len(inner.Elts) == 1 { // metav1.Duration{Duration: d}
			val = inner.Elts[0].(*ast.KeyValueExpr).Value
		}
		v, err := l.eval(val, s)
		if err != nil {
			return le, fmt.Errorf("leaderElectionConfiguration: %w", err)
		}
		if err := setLeaderElection(&le, kv.Key.(*ast.Ident).Name, v); err != nil {
			return le, err
		}
	}
	return le, nil
}

func setLeaderElection(le *componentbaseconfig.LeaderElectionConfiguration, field string, v constant.Value) error {
	dur := func() time.Duration { n, _ := constant.Int64Val(v); return time.Duration(n) }
	switch field {
	case "LeaderElect":
		b := constant.BoolVal(v)
		le.LeaderElect = b
	case "LeaseDuration":
		le.LeaseDuration.Duration = dur()
	case "RenewDeadline":
		le.RenewDeadline.Duration = dur()
	case "RetryPeriod":
		le.RetryPeriod.Duration = dur()
	case "ResourceLock":
		le.ResourceLock = constant.StringVal(v)
	case "ResourceName":
		le.ResourceName = constant.StringVal(v)
	case "ResourceNamespace":
		le.ResourceNamespace = constant.StringVal(v)
	default:
		return fmt.Errorf("leaderElectionConfiguration sets %s, which the generator does not know", field)
	}
	return nil
}
