package opensearch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestWriteBlockLeavesNoWriteInFlight: once SetWriteBlock returns, the index takes no more
// writes, even from those under way when it was called; blocking it again succeeds. The
// rebuild's final copy pass relies on it: a write processed after the pass read its
// checkpoints would be an acknowledged write the new index never gets.
func TestWriteBlockLeavesNoWriteInFlight(t *testing.T) {
	c := testsupport.OpenSearchClient(t)
	ctx := context.Background()
	name := fmt.Sprintf("write-block-%d", time.Now().UnixNano())
	scratchIndex(t, c, name, map[string]any{"index.number_of_shards": 2, "index.number_of_replicas": 0, "index.refresh_interval": "-1"},
		map[string]any{"nums": map[string]any{"type": "float"}})
	count := func() int64 {
		t.Helper()
		if err := c.Refresh(ctx, name); err != nil {
			t.Fatal(err)
		}
		n, err := c.DocCount(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Many writers of one slow-to-parse document each: a shard parses a document before it
	// gives it a sequence number, so a write admitted before the block can be mid-parse
	// while the shard's checkpoints show nothing in flight.
	const rounds, writers = 6, 16
	nums := "[" + strings.Repeat("0.5,", 20000) + "1]"
	for round := range rounds {
		var wg sync.WaitGroup
		failures := make(chan error, writers)
		runCtx, cancel := context.WithTimeout(ctx, time.Minute)
		for w := range writers {
			wg.Go(func() {
				for seq := 0; runCtx.Err() == nil; seq++ {
					ndjson := fmt.Appendf(nil, "{\"index\":{\"_index\":%q,\"_id\":\"%d-%d-%d\"}}\n{\"nums\":%s}\n", name, round, w, seq, nums)
					var be *opensearch.BulkError
					switch err := c.Bulk(runCtx, ndjson); {
					case errors.As(err, &be) && strings.Contains(be.First, "cluster_block_exception"):
						return
					case err != nil && runCtx.Err() == nil:
						failures <- err
						return
					}
				}
			})
		}
		time.Sleep(1500 * time.Millisecond)
		err := c.SetWriteBlock(ctx, name, true)
		blocked := time.Now()
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		// Again, as a swap retried after a failure or a restart does: the block stands.
		if err := c.SetWriteBlock(ctx, name, true); err != nil {
			cancel()
			t.Fatalf("blocking the blocked index again: %v", err)
		}
		atBlock := count()
		wg.Wait()
		cancel()
		close(failures)
		for err := range failures {
			t.Fatalf("round %d: a write failed other than by the block: %v", round+1, err)
		}
		if after := count(); after != atBlock {
			t.Fatalf("round %d: %d documents when SetWriteBlock returned, %d once the writers stopped (%s later): writes were processed after the block",
				round+1, atBlock, after, time.Since(blocked).Round(time.Millisecond))
		}
		t.Logf("round %d: %d documents, none written after the block", round+1, atBlock)
		if err := c.SetWriteBlock(ctx, name, false); err != nil {
			t.Fatal(err)
		}
	}
}
