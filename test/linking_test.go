package test

import (
	"slices"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/vectorpilot/vectorpilot/internal/testgate"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
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
	forbidden := []string{
		"sigs.k8s.io/controller-runtime/pkg/envtest",
		"github.com/vectorpilot/vectorpilot/internal/devenv",
		"github.com/vectorpilot/vectorpilot/internal/testsupport",
		"github.com/vectorpilot/vectorpilot/internal/kubenode",
		"github.com/vectorpilot/vectorpilot/internal/images",
	}
	var found []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if slices.Contains(forbidden, p.PkgPath) {
			found = append(found, p.PkgPath)
		}
	})
	if len(found) > 0 {
		t.Errorf("cmd/vectorpilot links %v", found)
	}
}
