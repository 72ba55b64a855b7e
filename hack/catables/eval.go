package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// caModule is the import path of Cluster Autoscaler's module.
const caModule = "k8s.io/autoscaler/cluster-autoscaler"

// external are the values of the constants of other modules that CA's
// defaults use; the generator stops at any other.
var external = map[string]constant.Value{
	"k8s.io/client-go/rest.DefaultBurst":                                    constant.MakeInt64(int64(rest.DefaultBurst)),
	"k8s.io/client-go/rest.DefaultQPS":                                      constant.MakeFloat64(float64(rest.DefaultQPS)),
	"k8s.io/client-go/tools/leaderelection/resourcelock.LeasesResourceLock": constant.MakeString(resourcelock.LeasesResourceLock),
}

var timeUnits = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

// file is a parsed Go file of CA with its imports by name.
type file struct {
	pkg     *pkg
	ast     *ast.File
	imports map[string]string
}

// decl is a package-level constant or variable given one value.
type decl struct {
	file *file
	expr ast.Expr
}

// pkg is a package of CA, parsed.
type pkg struct {
	dir    string
	files  []*file
	decls  map[string]decl
	funcs  map[string]*ast.FuncDecl
	fileOf map[*ast.FuncDecl]*file
}

// loader parses CA's packages on demand.
type loader struct {
	src  source
	fset *token.FileSet
	pkgs map[string]*pkg
}

func newLoader(src source) *loader {
	return &loader{src: src, fset: token.NewFileSet(), pkgs: map[string]*pkg{}}
}

func (l *loader) load(dir string) (*pkg, error) {
	if p, ok := l.pkgs[dir]; ok {
		return p, nil
	}
	names, err := l.src.goFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	p := &pkg{dir: dir, decls: map[string]decl{}, funcs: map[string]*ast.FuncDecl{}, fileOf: map[*ast.FuncDecl]*file{}}
	for _, name := range names {
		data, err := l.src.readFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(l.fset, name, data, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if hasBuildConstraint(f) {
			continue
		}
		p.add(&file{pkg: p, ast: f, imports: importsOf(f)})
	}
	l.pkgs[dir] = p
	return p, nil
}

// hasBuildConstraint: files for other builds (CA's per-provider builders)
// are left out; the defaults read come from files every build has.
func hasBuildConstraint(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") {
				return true
			}
		}
	}
	return false
}

func (p *pkg) add(f *file) {
	p.files = append(p.files, f)
	for _, d := range f.ast.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.funcs[d.Name.Name] = d
				p.fileOf[d] = f
			}
		case *ast.GenDecl:
			if d.Tok != token.CONST && d.Tok != token.VAR {
				continue
			}
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, n := range vs.Names {
					p.decls[n.Name] = decl{file: f, expr: vs.Values[i]}
				}
			}
		}
	}
}

func importsOf(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = path
	}
	return out
}

// scope is where an expression is evaluated: its file and the arguments
// of the function being evaluated, if any.
type scope struct {
	file   *file
	locals map[string]constant.Value
}

// eval computes a constant expression of CA's source: literals, arithmetic,
// conversions, time units, constants of CA's packages and the few of
// other modules in external, and calls of CA functions that return one
// such expression (fmt.Sprintf of constants included).
func (l *loader) eval(e ast.Expr, s scope) (constant.Value, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		v := constant.MakeFromLiteral(e.Value, e.Kind, 0)
		if v.Kind() == constant.Unknown {
			return nil, fmt.Errorf("literal %s", e.Value)
		}
		return v, nil
	case *ast.ParenExpr:
		return l.eval(e.X, s)
	case *ast.Ident:
		return l.ident(e.Name, s)
	case *ast.SelectorExpr:
		return l.selector(e, s)
	case *ast.UnaryExpr:
		x, err := l.eval(e.X, s)
		if err != nil {
			return nil, err
		}
		return constant.UnaryOp(e.Op, x, 0), nil
	case *ast.BinaryExpr:
		return l.binary(e, s)
	case *ast.CallExpr:
		return l.call(e, s)
	}
	return nil, fmt.Errorf("cannot evaluate %s", l.text(e))
}

func (l *loader) ident(name string, s scope) (constant.Value, error) {
	if v, ok := s.locals[name]; ok {
		return v, nil
	}
	switch name {
	case "true", "false":
		return constant.MakeBool(name == "true"), nil
	}
	d, ok := s.file.pkg.decls[name]
	if !ok {
		return nil, fmt.Errorf("%s: no constant %s", s.file.pkg.dir, name)
	}
	return l.eval(d.expr, scope{file: d.file})
}

func (l *loader) selector(e *ast.SelectorExpr, s scope) (constant.Value, error) {
	x, ok := e.X.(*ast.Ident)
	if !ok {
		return nil, fmt.Errorf("cannot evaluate %s", l.text(e))
	}
	path, ok := s.file.imports[x.Name]
	if !ok {
		return nil, fmt.Errorf("cannot evaluate %s: %s is not an import", l.text(e), x.Name)
	}
	switch {
	case path == "time":
		if d, ok := timeUnits[e.Sel.Name]; ok {
			return constant.MakeInt64(int64(d)), nil
		}
	case path == caModule || strings.HasPrefix(path, caModule+"/"):
		p, err := l.load(strings.TrimPrefix(strings.TrimPrefix(path, caModule), "/"))
		if err != nil {
			return nil, err
		}
		d, ok := p.decls[e.Sel.Name]
		if !ok {
			return nil, fmt.Errorf("%s: no constant %s", path, e.Sel.Name)
		}
		return l.eval(d.expr, scope{file: d.file})
	default:
		if v, ok := external[path+"."+e.Sel.Name]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("cannot evaluate %s (%s): add it to the generator's table of other modules' constants", l.text(e), path)
}

func (l *loader) binary(e *ast.BinaryExpr, s scope) (constant.Value, error) {
	x, err := l.eval(e.X, s)
	if err != nil {
		return nil, err
	}
	y, err := l.eval(e.Y, s)
	if err != nil {
		return nil, err
	}
	op := e.Op
	if op == token.QUO && x.Kind() == constant.Int && y.Kind() == constant.Int {
		op = token.QUO_ASSIGN // integer division
	}
	switch op {
	case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
		return constant.MakeBool(constant.Compare(x, op, y)), nil
	}
	return constant.BinaryOp(x, op, y), nil
}

func (l *loader) call(e *ast.CallExpr, s scope) (constant.Value, error) {
	args := make([]constant.Value, len(e.Args))
	for i, a := range e.Args {
		v, err := l.eval(a, s)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch fun := e.Fun.(type) {
	case *ast.Ident:
		switch fun.Name {
		case "float64", "float32":
			return constant.ToFloat(args[0]), nil
		case "int", "int64", "int32", "uint", "uint64":
			return constant.ToInt(args[0]), nil
		case "string":
			return args[0], nil
		}
		if fd, ok := s.file.pkg.funcs[fun.Name]; ok {
			return l.callFunc(fd, s.file.pkg.fileOf[fd], args)
		}
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok {
			switch s.file.imports[x.Name] + "." + fun.Sel.Name {
			case "time.Duration":
				return constant.ToInt(args[0]), nil
			case "fmt.Sprintf":
				return sprintf(args)
			}
		}
	}
	return nil, fmt.Errorf("cannot evaluate the call %s", l.text(e))
}

// callFunc evaluates a CA function whose body is one return statement.
func (l *loader) callFunc(fd *ast.FuncDecl, f *file, args []constant.Value) (constant.Value, error) {
	if len(fd.Body.List) != 1 {
		return nil, fmt.Errorf("cannot evaluate %s: more than a return", fd.Name.Name)
	}
	ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil, fmt.Errorf("cannot evaluate %s: not one return", fd.Name.Name)
	}
	locals := map[string]constant.Value{}
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, n := range field.Names {
			if i >= len(args) {
				return nil, fmt.Errorf("%s: too few arguments", fd.Name.Name)
			}
			locals[n.Name] = args[i]
			i++
		}
	}
	return l.eval(ret.Results[0], scope{file: f, locals: locals})
}

func sprintf(args []constant.Value) (constant.Value, error) {
	if len(args) == 0 || args[0].Kind() != constant.String {
		return nil, fmt.Errorf("fmt.Sprintf without a constant format")
	}
	var vals []any
	for _, a := range args[1:] {
		vals = append(vals, goValue(a))
	}
	return constant.MakeString(fmt.Sprintf(constant.StringVal(args[0]), vals...)), nil
}

func goValue(v constant.Value) any {
	switch v.Kind() {
	case constant.String:
		return constant.StringVal(v)
	case constant.Bool:
		return constant.BoolVal(v)
	case constant.Int:
		n, _ := constant.Int64Val(v)
		return n
	case constant.Float:
		f, _ := constant.Float64Val(v)
		return f
	}
	return v.String()
}

func (l *loader) text(e ast.Expr) string {
	pos := l.fset.Position(e.Pos())
	return fmt.Sprintf("%s (%s:%d)", types.ExprString(e), pos.Filename, pos.Line)
}
