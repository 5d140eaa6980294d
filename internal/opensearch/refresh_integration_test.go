package opensearch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestRefreshOfAnAliasOfSeveralIndexes: Refresh reads the replication settings of every
// index a name stands for, so an alias of several indexes refreshes them all. (Its wait
// for segment-replication replicas runs on two nodes in the controllers'
// TestRebuildUnderSegmentReplicationCopiesEveryWrite.)
func TestRefreshOfAnAliasOfSeveralIndexes(t *testing.T) {
	c := testsupport.OpenSearchClient(t)
	ctx := context.Background()
	alias := fmt.Sprintf("refresh-%d", time.Now().UnixNano())
	var ndjson []byte
	for i := range 2 {
		name := fmt.Sprintf("%s-%d", alias, i)
		scratchIndex(t, c, name, map[string]any{"index.number_of_replicas": 0, "index.refresh_interval": "-1"}, map[string]any{"v": map[string]any{"type": "keyword"}})
		ndjson = fmt.Appendf(ndjson, "{\"index\":{\"_index\":%q}}\n{\"v\":\"x\"}\n", name)
	}
	if err := c.UpdateAliases(ctx, opensearch.AliasAction{"add": map[string]any{"index": alias + "-*", "alias": alias}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Bulk(ctx, ndjson); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx, alias); err != nil {
		t.Fatalf("refreshing alias %s of two indexes: %v", alias, err)
	}
	if n, err := c.DocCount(ctx, alias); err != nil || n != 2 {
		t.Errorf("after the refresh %s counts %d documents (%v), want 2", alias, n, err)
	}
}
