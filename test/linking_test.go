package test

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

const (
	module  = "github.com/vectorpilot/vectorpilot"
	harness = module + "/internal/harness/"
)

// TestOperatorLinksNoDevelopmentEnvironment: the shipped binary links none of the
// development and test harness — envtest's package init panics on a read-only filesystem,
// and what it links is what scanners of the image report. The local control plane of
// `make demo` is cmd/vectorpilot-dev.
func TestOperatorLinksNoDevelopmentEnvironment(t *testing.T) {
	testgate.Integration(t, "the operator's package graph loaded")
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: testsupport.Root(t)}, "./cmd/vectorpilot")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.PkgPath == "sigs.k8s.io/controller-runtime/pkg/envtest" || strings.HasPrefix(p.PkgPath, harness) {
			found = append(found, p.PkgPath)
		}
	})
	if len(found) > 0 {
		t.Errorf("cmd/vectorpilot links %v", found)
	}
}

// TestArrowsPointDown: the layout's layers — the product (api, controllers, internal/
// outside the harness, cmd/vectorpilot), the test and development harness
// (internal/harness), the tests and the dev command above both — import only downward: no
// product package imports the harness, and the harness imports neither the controllers
// nor the operator's wiring (a test that runs the operator lives in controllers/operatortest).
// The harness of the end-to-end tests (test/harness) is in the tests' module, which the
// operator's cannot import.
func TestArrowsPointDown(t *testing.T) {
	testgate.Integration(t, "the module's package graph loaded")
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports, Dir: testsupport.Root(t)},
		"./api/...", "./controllers", "./internal/...", "./cmd/vectorpilot")
	if err != nil {
		t.Fatal(err)
	}
	upward := []string{module + "/controllers", module + "/internal/operator"}
	var wrong []string
	for _, p := range pkgs {
		inHarness := strings.HasPrefix(p.PkgPath, harness)
		for imp := range p.Imports {
			if (!inHarness && strings.HasPrefix(imp, harness)) || (inHarness && slices.Contains(upward, imp)) {
				wrong = append(wrong, p.PkgPath+" → "+imp)
			}
		}
	}
	if len(pkgs) < 20 || len(wrong) > 0 {
		t.Errorf("%d packages loaded; imports against the layers: %v", len(pkgs), wrong)
	}
}

// TestLayoutNamesEveryPackage: docs/development.md's layout has a line for every package
// under internal/, in the group its path puts it in.
func TestLayoutNamesEveryPackage(t *testing.T) {
	testgate.Integration(t, "the module's package graph loaded")
	root := testsupport.Root(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName, Dir: root}, "./internal/...")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.PkgPath, module+"/")
		group, name := path.Split(rel) // "internal/harness/", "kubenode"
		g := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, group+" ") })
		if g < 0 {
			t.Errorf("docs/development.md: no layout group %s for %s", group, rel)
			continue
		}
		end := g + 1
		for end < len(lines) && strings.HasPrefix(lines[end], " ") {
			end++
		}
		if !slices.ContainsFunc(lines[g+1:end], func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l)+" ", name+" ") }) {
			t.Errorf("docs/development.md: group %s has no line for %s", group, name)
		}
	}
}
