// Package test holds repository-wide checks and end-to-end tests.
package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/testsupport"
)

// TestGeneratedFilesAreCurrent regenerates CRDs, RBAC and deepcopy code into a temporary
// folder and fails when the committed files differ: run `make generate manifests`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := testsupport.Root(t)
	gen := filepath.Join(root, "bin", "controller-gen")
	if _, err := os.Stat(gen); err != nil {
		t.Fatalf("controller-gen missing at %s: run hack/install-tools.sh (make test does)", gen)
	}
	tmp := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command(gen, args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %v: %v\n%s", args, err, out)
		}
	}
	run("rbac:roleName=vectorpilot-manager", "crd", "paths=./...",
		"output:crd:artifacts:config="+filepath.Join(tmp, "crd"), "output:rbac:artifacts:config="+filepath.Join(tmp, "rbac"))
	run("object", "paths=./api/...", "output:dir="+filepath.Join(tmp, "object"))

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
