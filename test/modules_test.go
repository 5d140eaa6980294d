package test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// The repository's Go modules: the operator's (what it links and what its own packages'
// tests need), the tests' (this module: the end-to-end harness, Helm, kubeconform,
// go-containerregistry and the provisioner library stay out of the operator's go.mod, so a
// scanner of the operator's module sees what it links) and Argo CD's health checks (older
// Kubernetes libraries).
var modules = []string{".", "test", "test/argocd"}

// TestModulesAreTidy: every go.mod lists exactly what its packages and their tests import
// (`go mod tidy` in each folder of modules).
func TestModulesAreTidy(t *testing.T) {
	testgate.Integration(t, "the go command's module graph")
	root := testsupport.Root(t)
	for _, dir := range modules {
		cmd := exec.Command("go", "mod", "tidy", "-diff")
		cmd.Dir = filepath.Join(root, dir)
		cmd.Env = devenv.OutsideWorkspace()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s/go.mod is not tidy (run go mod tidy there): %v\n%s", dir, err, out)
		}
	}
}

// TestTestsBuildTheOperatorAsShipped: this module requires the operator's, so Go selects
// versions over both; a test-only dependency that raised a module the operator builds with
// would have these tests prove a build nobody ships. Every module that gives the operator's
// module a package (its binaries and its own tests) has the same version here.
func TestTestsBuildTheOperatorAsShipped(t *testing.T) {
	testgate.Integration(t, "the go command's module graph")
	root := testsupport.Root(t)
	goList := func(dir string, args ...string) map[string]string {
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = dir
		cmd.Env = devenv.OutsideWorkspace()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v in %s: %v", args, dir, err)
		}
		versions := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if path, version, ok := strings.Cut(line, " "); ok && version != "" {
				versions[path] = version
			}
		}
		return versions
	}
	operator := goList(root, "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
	tests := goList(filepath.Join(root, "test"), "-m", "all")
	if len(operator) < 50 {
		t.Fatalf("the operator's module builds with %d modules; expected its whole dependency set", len(operator))
	}
	for path, version := range operator {
		if tests[path] != version {
			t.Errorf("%s: the operator builds with %s, the tests with %q", path, version, tests[path])
		}
	}
}
