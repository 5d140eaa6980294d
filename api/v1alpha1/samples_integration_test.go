package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		})
	}
}
