package opensearch_test

import (
	"context"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// scratchIndex creates an index the test deletes when it ends.
func scratchIndex(t *testing.T, c *opensearch.Client, name string, settings, properties map[string]any) {
	t.Helper()
	if err := c.CreateIndex(context.Background(), name, settings, properties, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteIndex(context.Background(), name) })
}
