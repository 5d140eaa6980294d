package opensearch_test

import (
	"context"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// nodeClient is a client of the tests' shared node, closed when the test ends.
func nodeClient(t *testing.T) *opensearch.Client {
	t.Helper()
	c, err := opensearch.New(opensearch.Config{Endpoint: testsupport.OpenSearchURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// scratchIndex creates an index the test deletes when it ends.
func scratchIndex(t *testing.T, c *opensearch.Client, name string, settings, properties map[string]any) {
	t.Helper()
	if err := c.CreateIndex(context.Background(), name, settings, properties, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteIndex(context.Background(), name) })
}
