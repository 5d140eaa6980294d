package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/testsupport"
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
