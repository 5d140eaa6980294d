package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestEverySampleIsAccepted applies every manifest of config/samples to the real apiserver.
func TestEverySampleIsAccepted(t *testing.T) {
	c := newClient(t)
	files, err := filepath.Glob(filepath.Join(testsupport.Root(t), "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
				t.Fatal(err)
			}
			obj.SetNamespace("samples")
			ensureNamespace(t, c, "samples")
			if err := c.Create(context.Background(), obj); err != nil {
				t.Fatalf("sample refused: %v", err)
			}
			// No operator runs here: as Flux's kstatus reads it, a new object is
			// InProgress (its status defaults to observedGeneration 0), never Current.
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			if res, err := kstatus.Compute(obj); err != nil || res.Status != kstatus.InProgressStatus {
				t.Errorf("kstatus of the new object: %+v %v, want InProgress", res, err)
			}
		})
	}
}

// TestReadmeQuickStartIsAccepted applies the objects of the README's quick start (its
// heredocs) to the real apiserver: what a new user pastes first must be admitted.
func TestReadmeQuickStartIsAccepted(t *testing.T) {
	c := newClient(t)
	raw, err := os.ReadFile(filepath.Join(testsupport.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile(`(?s)<<'EOF'\n(.*?)\nEOF\n`).FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < 2 {
		t.Fatalf("the README's quick start has %d heredocs, want its SearchCluster and VectorIndex", len(blocks))
	}
	ensureNamespace(t, c, "readme")
	for _, b := range blocks {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(b[1]), &obj.Object); err != nil {
			t.Fatalf("%v:\n%s", err, b[1])
		}
		obj.SetNamespace("readme")
		if err := c.Create(context.Background(), obj, client.DryRunAll); err != nil {
			t.Errorf("the README's %s %s is refused: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}
