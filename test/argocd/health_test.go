package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/gitops-engine/pkg/health"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	appv1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/lua"
)

const healthKeyPrefix = "resource.customizations.health."

// kinds are vectorpilot's kinds, each with the one health script.
var kinds = []string{"SearchCluster", "VectorIndex", "SnapshotPolicy", "VectorSnapshot", "BenchmarkRun"}

// snippetHeader opens docs/gitops/argocd-cm-health.yaml.
const snippetHeader = `# Argo CD health checks for vectorpilot's kinds: merge into the argocd-cm ConfigMap
# (kubectl -n argocd patch configmap argocd-cm --patch-file docs/gitops/argocd-cm-health.yaml).
# Without them Argo CD shows every vectorpilot object Healthy as soon as it exists, so a sync
# wave never waits for a VectorIndex and a Degraded one never turns the Application red.
# One script (docs/gitops/argocd-health.lua) for all five kinds; test/argocd runs it with
# Argo CD's own Lua health code. Do not edit here: edit the .lua file, then
# UPDATE_ARGOCD_HEALTH=1 go test ./... in test/argocd.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
data:
`

// snippet is the argocd-cm snippet of script: one key per kind, the script as a block.
func snippet(script string) string {
	var b strings.Builder
	b.WriteString(snippetHeader)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %svectorpilot.io_%s: |\n", healthKeyPrefix, k)
		for _, line := range strings.Split(strings.TrimSuffix(script, "\n"), "\n") {
			b.WriteString(strings.TrimRight("    "+line, " ") + "\n")
		}
	}
	return b.String()
}

// overrides reads the shipped argocd-cm snippet as Argo CD's settings manager does: a key
// resource.customizations.health.<group>_<Kind> is the override of <group>/<Kind>.
func overrides(t *testing.T) map[string]appv1.ResourceOverride {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "docs", "gitops", "argocd-health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "gitops", "argocd-cm-health.yaml")
	if os.Getenv("UPDATE_ARGOCD_HEALTH") == "1" {
		if err := os.WriteFile(path, []byte(snippet(string(script))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != snippet(string(script)) {
		t.Errorf("docs/gitops/argocd-cm-health.yaml is stale: UPDATE_ARGOCD_HEALTH=1 go test ./... in test/argocd")
	}
	var cm struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   map[string]string `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(raw, &cm); err != nil {
		t.Fatal(err)
	}
	out := map[string]appv1.ResourceOverride{}
	for k, v := range cm.Data {
		if v != string(script) {
			t.Errorf("%s differs from docs/gitops/argocd-health.lua: regenerate the snippet", k)
		}
		gk := strings.Replace(strings.TrimPrefix(k, healthKeyPrefix), "_", "/", 1)
		out[gk] = appv1.ResourceOverride{HealthLua: v}
	}
	return out
}

type cond struct {
	typ, status, reason, message string
	observed                     int64
}

func object(kind string, generation int64, paused bool, conds ...cond) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "vectorpilot.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "search", "generation": generation},
	}
	if len(conds) > 0 || paused {
		var list []any
		for _, c := range conds {
			list = append(list, map[string]any{"type": c.typ, "status": c.status, "reason": c.reason, "message": c.message,
				"observedGeneration": c.observed, "lastTransitionTime": "2026-11-23T17:00:00Z"})
		}
		if paused {
			list = append(list, map[string]any{"type": "Paused", "status": "True", "reason": "Paused", "message": "vectorpilot.io/paused is set",
				"observedGeneration": generation, "lastTransitionTime": "2026-11-23T17:00:00Z"})
		}
		obj["status"] = map[string]any{"observedGeneration": generation, "conditions": list}
	}
	return &unstructured.Unstructured{Object: obj}
}

// The conditions as the operator writes them: one of Ready, Progressing, Degraded True at
// a time (internal/conditions), with the reasons of api/v1alpha1/reasons.go.
func states(gen int64) map[string][]cond {
	return map[string][]cond{
		"ready":       {{"Ready", "True", "Reconciled", "green", gen}, {"Progressing", "False", "Reconciled", "", gen}, {"Degraded", "False", "Reconciled", "", gen}},
		"progressing": {{"Ready", "False", "RollingRestart", "2 pods to restart", gen}, {"Progressing", "True", "RollingRestart", "2 pods to restart", gen}, {"Degraded", "False", "RollingRestart", "", gen}},
		"degraded":    {{"Ready", "False", "Unreachable", "connection refused", gen}, {"Progressing", "False", "Unreachable", "", gen}, {"Degraded", "True", "Unreachable", "connection refused", gen}},
		"stale":       {{"Ready", "True", "Reconciled", "green", gen - 1}, {"Progressing", "False", "Reconciled", "", gen - 1}, {"Degraded", "False", "Reconciled", "", gen - 1}},
	}
}

// TestHealthWithArgoCDsOwnCode: every kind in every state, through Argo CD's Lua VM as
// Argo CD runs a resource customization (GetHealthScript finds it by the key, then
// ExecuteHealthLua).
func TestHealthWithArgoCDsOwnCode(t *testing.T) {
	vm := lua.VM{ResourceOverrides: overrides(t)}
	want := map[string]health.HealthStatusCode{
		"ready": health.HealthStatusHealthy, "progressing": health.HealthStatusProgressing,
		"degraded": health.HealthStatusDegraded, "stale": health.HealthStatusProgressing,
		"paused": health.HealthStatusSuspended, "new": health.HealthStatusProgressing,
	}
	var table strings.Builder
	for _, kind := range kinds {
		cases := map[string]*unstructured.Unstructured{
			"paused": object(kind, 3, true, states(3)["ready"]...),
			"new":    object(kind, 1, false),
		}
		for name, conds := range states(3) {
			cases[name] = object(kind, 3, false, conds...)
		}
		for _, name := range []string{"ready", "progressing", "degraded", "stale", "paused", "new"} {
			obj := cases[name]
			script, _, err := vm.GetHealthScript(obj)
			if err != nil || script == "" {
				t.Fatalf("%s: Argo CD finds no health script (%v): the argocd-cm key is wrong", kind, err)
			}
			hs, err := vm.ExecuteHealthLua(obj, script)
			if err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			if hs.Status != want[name] {
				t.Errorf("%s %s: %s (%s), want %s", kind, name, hs.Status, hs.Message, want[name])
			}
			fmt.Fprintf(&table, "%-15s %-12s %-12s %s\n", kind, name, hs.Status, hs.Message)
		}
	}
	t.Logf("Argo CD health:\n%s", table.String())
	degraded, _ := vm.ExecuteHealthLua(object("VectorIndex", 3, false, states(3)["degraded"]...), vm.ResourceOverrides["vectorpilot.io/VectorIndex"].HealthLua)
	if degraded.Message != "Unreachable: connection refused" {
		t.Errorf("a Degraded VectorIndex says %q, want its reason and message", degraded.Message)
	}
}

// captured reads the objects the operator wrote in the controllers' integration tests
// (test/testdata/status, `make capture-status`), named <kind>-<state>-<reason>[-Paused].yaml.
func captured(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "status", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured objects in test/testdata/status (make capture-status): %v", err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Through JSON, so numbers decode as Kubernetes decodes them (int64, not float64).
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = obj
	}
	return out
}

// TestHealthOfCapturedObjects: the shipped health script, through Argo CD's own Lua code,
// over every object the operator really wrote: Ready → Healthy, Progressing or not yet
// looked at → Progressing, Degraded → Degraded with its reason, paused → Suspended, and
// each with a spec change not yet observed → Progressing.
func TestHealthOfCapturedObjects(t *testing.T) {
	vm := lua.VM{ResourceOverrides: overrides(t)}
	want := map[string]health.HealthStatusCode{"Ready": health.HealthStatusHealthy, "Progressing": health.HealthStatusProgressing,
		"Degraded": health.HealthStatusDegraded, "New": health.HealthStatusProgressing}
	objects := captured(t)
	names := make([]string, 0, len(objects))
	for name := range objects {
		names = append(names, name)
	}
	sort.Strings(names)
	var table strings.Builder
	for _, name := range names {
		obj := objects[name]
		base, paused := strings.CutSuffix(name, "-Paused")
		parts := strings.SplitN(base, "-", 3)
		if len(parts) != 3 {
			t.Fatalf("%s: not <kind>-<state>-<reason>", name)
		}
		expected := want[parts[1]]
		behind := false
		if observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); observed != obj.GetGeneration() {
			// Captured after a spec change, before the operator saw it.
			expected, behind = health.HealthStatusProgressing, true
		}
		if paused {
			expected = health.HealthStatusSuspended
		}
		script, _, err := vm.GetHealthScript(obj)
		if err != nil || script == "" {
			t.Fatalf("%s: Argo CD finds no health script (%v)", name, err)
		}
		hs, err := vm.ExecuteHealthLua(obj, script)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hs.Status != expected {
			t.Errorf("%s: %s (%s), want %s", name, hs.Status, hs.Message, expected)
		}
		if parts[1] == "Degraded" && !paused && !behind && !strings.HasPrefix(hs.Message, parts[2]+":") {
			t.Errorf("%s: Degraded message %q does not start with its reason", name, hs.Message)
		}
		stale := obj.DeepCopy()
		stale.SetGeneration(obj.GetGeneration() + 1)
		if hs, _ := vm.ExecuteHealthLua(stale, script); !paused && hs.Status != health.HealthStatusProgressing {
			t.Errorf("%s with an unobserved generation: %s, want Progressing", name, hs.Status)
		}
		fmt.Fprintf(&table, "%-15s %-12s %-26s %-7v %-11s %s\n", obj.GetKind(), parts[1], parts[2], paused, hs.Status, hs.Message)
	}
	t.Logf("Argo CD health of the captured objects (kind, state, reason, paused, status, message):\n%s", table.String())
}
