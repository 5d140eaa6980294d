package conform

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.Kube)) }

// TestShippedSchemasAreCurrent regenerates the schemas from the real apiserver and
// compares them with schemas/; UPDATE_SCHEMAS=1 (make schemas) writes them instead.
func TestShippedSchemasAreCurrent(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	installMonitoringCRDs(t, cp.Env)
	installArgoCDCRDs(t, cp.Env)
	installFluxCRDs(t, cp.Env)
	files, err := Generate(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := SchemaDir()
	if os.Getenv("UPDATE_SCHEMAS") == "1" {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for _, name := range sortedFiles(files) {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, files[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d schemas to %s", len(files), dir)
		return
	}
	shipped := map[string]bool{}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			shipped[rel] = true
		}
		return nil
	})
	for _, name := range sortedFiles(files) {
		have, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(have, files[name]) {
			t.Errorf("test/conform/schemas/%s is missing or stale; run `make schemas`", name)
		}
		delete(shipped, name)
	}
	for name := range shipped {
		t.Errorf("test/conform/schemas/%s is not generated any more; run `make schemas`", name)
	}
}

// installMonitoringCRDs generates the Prometheus Operator's ServiceMonitor and
// PrometheusRule CRDs from the pinned Go module with controller-gen and installs them.
func installMonitoringCRDs(t *testing.T, env *envtest.Environment) {
	t.Helper()
	root := testsupport.Root(t)
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring").Output()
	if err != nil {
		t.Fatalf("locating the monitoring module: %v", err)
	}
	out := t.TempDir()
	gen := exec.Command(filepath.Join(root, "bin", "controller-gen"), "crd:allowDangerousTypes=true", "paths=./v1", "output:crd:dir="+out)
	gen.Dir = strings.TrimSpace(string(mod))
	// With that module's own go.mod: the CRD carries its Kubernetes types' descriptions.
	gen.Env = devenv.OutsideWorkspace()
	if msg, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen on the monitoring types (make tools installs it): %v\n%s", err, msg)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(out, "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(out, "monitoring.coreos.com_prometheusrules.yaml"),
	}}); err != nil {
		t.Fatal(err)
	}
}

// TestManagedClusterObjectsPassServerDryRun: the SearchCluster that uses every option (a
// warm pool, a keystore, a remote store) passes the real apiserver's admission (OpenAPI and
// CEL), and so does every object the operator builds for it, sent with dryRun=All.
func TestManagedClusterObjectsPassServerDryRun(t *testing.T) {
	cp := testsupport.ControlPlane(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "searchcluster-every-option.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sc v1alpha1.SearchCluster
	if err := sigsyaml.UnmarshalStrict(raw, &sc); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sc.Namespace}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), sc.DeepCopy(), client.DryRunAll); err != nil {
		t.Fatalf("SearchCluster %s: %v", sc.Name, err)
	}
	pools, svc, err := managed.Objects(&sc, managed.Live{InitialManagers: managed.InitialClusterManagerNodes(&sc)})
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{svc, managed.NetworkPolicy(&sc, managed.Operator{Namespace: "vectorpilot-system"}), managed.DisruptionBudget(&sc, "green")}
	for _, p := range pools {
		objs = append(objs, p.ConfigMap, p.Headless, p.StatefulSet)
	}
	for _, o := range objs {
		if err := c.Create(t.Context(), o, client.DryRunAll); err != nil {
			t.Errorf("%T %s: %v", o, o.GetName(), err)
		}
	}
}

// moduleDir downloads a pinned module through the module proxy (not a dependency) and
// returns its folder, for the CRD manifests it ships.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	raw, err := exec.Command("go", "mod", "download", "-json", module).Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(raw, &mod); err != nil || jerr != nil || mod.Error != "" {
		t.Fatalf("downloading %s: %v %v %s", module, err, jerr, mod.Error)
	}
	return mod.Dir
}

// installArgoCDCRDs installs Argo CD's Application and ApplicationSet CRDs from the pinned
// Argo CD module's own manifests.
func installArgoCDCRDs(t *testing.T, env *envtest.Environment) {
	t.Helper()
	crds := filepath.Join(moduleDir(t, "github.com/argoproj/argo-cd/v3@"+ArgoCDVersion), "manifests", "crds")
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(crds, "application-crd.yaml"), filepath.Join(crds, "applicationset-crd.yaml"),
	}}); err != nil {
		t.Fatal(err)
	}
}

// installFluxCRDs installs Flux's Kustomization and GitRepository CRDs from the pinned
// controllers' own manifests.
func installFluxCRDs(t *testing.T, env *envtest.Environment) {
	t.Helper()
	kustomize := moduleDir(t, "github.com/fluxcd/kustomize-controller@"+FluxKustomizeControllerVersion)
	source := moduleDir(t, "github.com/fluxcd/source-controller@"+FluxSourceControllerVersion)
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(kustomize, "config", "crd", "bases", "kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
		filepath.Join(source, "config", "crd", "bases", "source.toolkit.fluxcd.io_gitrepositories.yaml"),
	}}); err != nil {
		t.Fatal(err)
	}
}
