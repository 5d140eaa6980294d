// Package test holds repository-wide checks and end-to-end tests.
package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestGeneratedFilesAreCurrent regenerates CRDs, RBAC, deepcopy code and the API reference into a temporary
// folder and fails when the committed files differ: run `make generate manifests`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	testgate.Integration(t, "controller-gen and crd-ref-docs from bin/")
	root := testsupport.Root(t)
	gen := filepath.Join(root, "bin", "controller-gen")
	if _, err := os.Stat(gen); err != nil {
		t.Fatalf("controller-gen missing at %s: run hack/install-tools.sh (make test does)", gen)
	}
	tmp := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command(gen, args...)
		cmd.Dir = root
		// controller-gen loads every module under the root itself (test/argocd is in no
		// workspace), as make manifests runs it.
		cmd.Env = devenv.OutsideWorkspace()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %v: %v\n%s", args, err, out)
		}
	}
	run("rbac:roleName=vectorpilot-manager", "crd", "paths=./...",
		"output:crd:artifacts:config="+filepath.Join(tmp, "crd"), "output:rbac:artifacts:config="+filepath.Join(tmp, "rbac"))
	run("object", "paths=./api/...", "output:dir="+filepath.Join(tmp, "object"))

	// The API reference, with the Makefile's flags.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^CRD_REF_DOCS_FLAGS := (.*)$`).FindSubmatch(makefile)
	if flags == nil {
		t.Fatal("the Makefile has no CRD_REF_DOCS_FLAGS")
	}
	refDocs := exec.Command(filepath.Join(root, "bin", "crd-ref-docs"), append(strings.Fields(string(flags[1])), "--output-path="+filepath.Join(tmp, "api-reference.md"))...)
	refDocs.Dir = root
	refDocs.Env = devenv.OutsideWorkspace()
	if out, err := refDocs.CombinedOutput(); err != nil {
		t.Fatalf("crd-ref-docs: %v\n%s", err, out)
	}
	compareFile(t, filepath.Join(tmp, "api-reference.md"), filepath.Join(root, "docs", "api-reference.md"))

	compareDir(t, filepath.Join(tmp, "crd"), filepath.Join(root, "config", "crd", "bases"), true)
	compareDir(t, filepath.Join(tmp, "rbac"), filepath.Join(root, "config", "rbac"), false)
	compareFile(t, filepath.Join(tmp, "object", "zz_generated.deepcopy.go"), filepath.Join(root, "api", "v1alpha1", "zz_generated.deepcopy.go"))
}

// compareDir checks every generated file against its committed twin; when the committed
// folder holds only generated files, a file there that is no longer generated fails too.
func compareDir(t *testing.T, generated, committed string, onlyGenerated bool) {
	t.Helper()
	entries, err := os.ReadDir(generated)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
		compareFile(t, filepath.Join(generated, e.Name()), filepath.Join(committed, e.Name()))
	}
	if !onlyGenerated {
		return
	}
	committedEntries, err := os.ReadDir(committed)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range committedEntries {
		if !names[e.Name()] {
			t.Errorf("%s is no longer generated: remove it", filepath.Join(committed, e.Name()))
		}
	}
}

func compareFile(t *testing.T, generated, committed string) {
	t.Helper()
	want, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Errorf("%s is not committed: run make generate manifests", committed)
		return
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: run make generate manifests", committed)
	}
}
