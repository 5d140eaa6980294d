package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// capturedStatus is one object the operator wrote in the controllers' integration tests
// (`make capture-status`), named <kind>-<state>-<reason>[-Paused].yaml, where state is the
// one of Ready, Progressing, Degraded that was True ("New" when none was yet).
type capturedStatus struct {
	File, Kind, State, Reason string
	Paused                    bool
	Object                    *unstructured.Unstructured
}

// capturedStatuses reads test/testdata/status.
func capturedStatuses(t *testing.T) []capturedStatus {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testsupport.Root(t), "test", "testdata", "status", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured objects in test/testdata/status (make capture-status): %v", err)
	}
	var out []capturedStatus
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
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		c := capturedStatus{File: filepath.Base(f), Kind: obj.GetKind(), Object: obj}
		name, c.Paused = strings.CutSuffix(name, "-Paused")
		parts := strings.SplitN(name, "-", 3)
		if len(parts) != 3 {
			t.Fatalf("%s: not <kind>-<state>-<reason>", f)
		}
		c.State, c.Reason = parts[1], parts[2]
		out = append(out, c)
	}
	return out
}

// TestKstatusOfCapturedObjects: kstatus (sigs.k8s.io/cli-utils, what Flux's health checks
// and `wait` run) over every object the operator wrote in the integration tests: Ready →
// Current, Progressing → InProgress, Degraded → Failed, not yet looked at → InProgress; an
// object whose spec changed since the operator last looked (captured so, or made so here)
// → InProgress; one created paused → Current once observed (kstatus has no Suspended). Pause does
// not change what kstatus says (it has no Suspended).
func TestKstatusOfCapturedObjects(t *testing.T) {
	want := map[string]kstatus.Status{"Ready": kstatus.CurrentStatus, "Progressing": kstatus.InProgressStatus, "Degraded": kstatus.FailedStatus, "New": kstatus.InProgressStatus}
	kinds := map[string]map[string]bool{}
	var table strings.Builder
	for _, c := range capturedStatuses(t) {
		res, err := kstatus.Compute(c.Object)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		expected := want[c.State]
		observed, _, _ := unstructured.NestedInt64(c.Object.Object, "status", "observedGeneration")
		switch {
		case observed != c.Object.GetGeneration():
			expected = kstatus.InProgressStatus // captured after a spec change, before the operator saw it
		case c.Paused && c.State == "New":
			// Created paused: observed, and by request nothing more will happen; kstatus
			// has no Suspended, so it is Current (Argo CD says Suspended).
			expected = kstatus.CurrentStatus
		}
		if res.Status != expected {
			t.Errorf("%s: kstatus %s (%s), want %s", c.File, res.Status, res.Message, expected)
		}
		stale := c.Object.DeepCopy()
		stale.SetGeneration(c.Object.GetGeneration() + 1)
		if res, _ := kstatus.Compute(stale); res.Status != kstatus.InProgressStatus {
			t.Errorf("%s with an unobserved generation: %s, want InProgress", c.File, res.Status)
		}
		if kinds[c.Kind] == nil {
			kinds[c.Kind] = map[string]bool{}
		}
		kinds[c.Kind][c.State] = true
		fmt.Fprintf(&table, "%-15s %-12s %-26s %-7v %-11s %s\n", c.Kind, c.State, c.Reason, c.Paused, res.Status, res.Message)
	}
	t.Logf("kstatus of the captured objects (kind, state, reason, paused, status, message):\n%s", table.String())
	for _, kind := range []string{"SearchCluster", "VectorIndex", "SnapshotPolicy", "VectorSnapshot", "BenchmarkRun"} {
		for _, state := range []string{"Ready", "Degraded"} {
			if !kinds[kind][state] {
				t.Errorf("no captured %s in state %s: the integration tests no longer reach it, or make capture-status was not run", kind, state)
			}
		}
	}
}
