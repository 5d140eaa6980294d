package test

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestReasonsComeFromTheRegistry: every condition and event reason the operator writes is a
// constant declared in api/v1alpha1 (reasons are API: users alert and search on them), and
// every event type is corev1's. A reason written as a literal, built at run time, or
// declared elsewhere fails here, naming the place; so does a condition set beside
// internal/conditions (meta.SetStatusCondition), which keeps the generation observed on
// every one.
func TestReasonsComeFromTheRegistry(t *testing.T) {
	testgate.Integration(t, "the operator's packages type-checked")
	const api = "github.com/vectorpilot/vectorpilot/api/v1alpha1"
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  testsupport.Root(t),
	}, "./controllers/...") // the one package that writes conditions and events
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	report := func(fset *token.FileSet, pos token.Pos, format string, args ...any) {
		problems = append(problems, fset.Position(pos).String()+": "+fmt.Sprintf(format, args...))
	}
	for _, pkg := range pkgs {
		for _, e := range pkg.Errors {
			t.Fatalf("loading %s: %v", pkg.PkgPath, e)
		}
		for _, file := range pkg.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if strings.HasPrefix(name.Name, "Reason") && i < len(n.Values) && pkg.PkgPath != api {
							report(pkg.Fset, name.Pos(), "reason constant %s declared outside api/v1alpha1", name.Name)
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						if fn := pkg.TypesInfo.Uses[sel.Sel]; fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "k8s.io/apimachinery/pkg/api/meta" && fn.Name() == "SetStatusCondition" {
							report(pkg.Fset, n.Pos(), "condition set with meta.SetStatusCondition: use internal/conditions (Set, SetAspect)")
						}
					}
					sig, ok := pkg.TypesInfo.TypeOf(n.Fun).(*types.Signature)
					if !ok {
						return true
					}
					for i, arg := range n.Args {
						if i >= sig.Params().Len() {
							break
						}
						switch sig.Params().At(i).Name() {
						case "reason":
							checkReason(pkg, arg, api, report)
						case "eventtype":
							if !fromPackage(pkg, arg, "k8s.io/api/core/v1") {
								report(pkg.Fset, arg.Pos(), "event type is not a corev1 constant")
							}
						}
					}
				case *ast.KeyValueExpr:
					if key, ok := n.Key.(*ast.Ident); ok && (key.Name == "reason" || key.Name == "Reason") {
						checkReason(pkg, n.Value, api, report)
					}
				}
				return true
			})
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// checkReason: a reason is a constant of the API package, or a variable carrying one.
func checkReason(pkg *packages.Package, arg ast.Expr, api string, report func(*token.FileSet, token.Pos, string, ...any)) {
	tv := pkg.TypesInfo.Types[arg]
	if tv.Value == nil {
		if _, built := arg.(*ast.BinaryExpr); built {
			report(pkg.Fset, arg.Pos(), "reason built at run time; declare each value in api/v1alpha1")
		}
		return // a variable or field: its values are checked where they are set
	}
	if !fromPackage(pkg, arg, api) {
		report(pkg.Fset, arg.Pos(), "reason %s is not a constant of api/v1alpha1", tv.Value.ExactString())
	}
}

// fromPackage: expr names an object of the package at path (a qualified identifier, or an
// identifier in that package itself).
func fromPackage(pkg *packages.Package, expr ast.Expr, path string) bool {
	var id *ast.Ident
	switch e := expr.(type) {
	case *ast.SelectorExpr:
		id = e.Sel
	case *ast.Ident:
		id = e
	default:
		return false
	}
	obj := pkg.TypesInfo.ObjectOf(id)
	return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == path
}
