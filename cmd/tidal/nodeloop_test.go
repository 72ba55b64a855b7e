package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NodeLoop only times iterations and wires the decider to the publisher
// and the pod loop: its size is bounded, and whatever else an iteration
// needs goes on the decider's small types or into pure functions.
const (
	maxNodeLoopFields  = 20
	maxNodeLoopMethods = 25
)

func TestNodeLoopOnlyTimesAndWires(t *testing.T) {
	files := parseDir(t, "../../core")
	fields, methods := 0, []string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.Name == "NodeLoop" {
						for _, field := range ts.Type.(*ast.StructType).Fields.List {
							fields += max(len(field.Names), 1)
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && receiverType(d.Recv.List[0].Type) == "NodeLoop" {
					methods = append(methods, d.Name.Name)
				}
			}
		}
	}
	t.Logf("NodeLoop: %d fields, %d methods", fields, len(methods))
	if fields == 0 {
		t.Fatal("no NodeLoop struct found in core")
	}
	if fields > maxNodeLoopFields {
		t.Errorf("NodeLoop has %d fields, more than %d: move what an iteration needs onto the decider's types", fields, maxNodeLoopFields)
	}
	if len(methods) > maxNodeLoopMethods {
		t.Errorf("NodeLoop has %d methods, more than %d (%s): move decisions and their inputs onto the decider's types or into pure functions",
			len(methods), maxNodeLoopMethods, strings.Join(methods, ", "))
	}
}

// tidal explain and simulate observe and decide through core.Decider; no
// node loop is built for them.
func TestExplainBuildsNoNodeLoop(t *testing.T) {
	for _, f := range parseDir(t, "../../explain") {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "NewNodeLoop" || sel.Sel.Name == "NodeLoop") {
				t.Errorf("package explain uses core.%s: decide with core.Decider instead", sel.Sel.Name)
			}
			return true
		})
	}
}

// parseDir parses the Go files of dir but its tests.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []*ast.File
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		out = append(out, f)
	}
	return out
}

// receiverType is the type name of a method's receiver, pointer or not.
func receiverType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
