package controllers_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// printedColumn is what `kubectl get` shows for obj in the named additional printer column
// of the CRD in config/crd/bases/crdFile.
func printedColumn(t *testing.T, crdFile, column string, obj any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", crdFile))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Name != column {
			continue
		}
		jp := jsonpath.New(column).AllowMissingKeys(true)
		if err := jp.Parse("{" + c.JSONPath + "}"); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := jp.Execute(&out, doc); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	t.Fatalf("%s has no printer column %s", crdFile, column)
	return ""
}

// TestReasonColumnSaysWhy: every kind prints its Ready condition's reason, so `kubectl get`
// says why an object is not ready (SecretNotFound, Unschedulable, IndexRed…) without a
// describe. Checked over every object the operator itself wrote in the integration tests
// (test/testdata/status, make capture-status): empty only before it wrote status.
func TestReasonColumnSaysWhy(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "test", "testdata", "status", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured status objects: %v", err)
	}
	crdFiles := map[string]string{
		"BenchmarkRun": "vectorpilot.io_benchmarkruns.yaml", "SearchCluster": "vectorpilot.io_searchclusters.yaml",
		"SnapshotPolicy": "vectorpilot.io_snapshotpolicies.yaml", "VectorIndex": "vectorpilot.io_vectorindices.yaml",
		"VectorSnapshot": "vectorpilot.io_vectorsnapshots.yaml",
	}
	kinds := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			Kind   string `json:"kind"`
			Status struct {
				Conditions []struct{ Type, Reason string } `json:"conditions"`
			} `json:"status"`
		}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		want := ""
		for _, c := range obj.Status.Conditions {
			if c.Type == "Ready" {
				want = c.Reason
			}
		}
		kinds[obj.Kind] = true
		if got := printedColumn(t, crdFiles[obj.Kind], "Reason", doc); got != want {
			t.Errorf("%s: Reason column %q, want the Ready condition's reason %q", filepath.Base(f), got, want)
		}
	}
	if len(kinds) != len(crdFiles) {
		t.Errorf("captured objects cover %v, want all of %v", kinds, crdFiles)
	}
}
