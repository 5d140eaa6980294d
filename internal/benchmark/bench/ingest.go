// Package bench is the benchmark engine: it loads a vector dataset into an index and
// measures searches against it.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Ingest bulk-loads vectors into field of index, document id = the vector's position, in
// batches of batchSize; progress, when not nil, is called after each batch with the count
// loaded so far.
func Ingest(ctx context.Context, c *opensearch.Client, index, field string, v dataset.Vectors, batchSize int, progress func(done int)) error {
	return ingestFrom(ctx, c, index, field, v, 0, batchSize, "index", progress)
}

// BulkBodyBytes caps a bulk request's body. As JSON a vector takes up to 16 bytes a
// component, so a fixed count of documents is unbounded in bytes (1,000 of 16,000
// dimensions: 256 MB): memory the Local runner's budget must count, and more than
// OpenSearch takes in one request (http.max_content_length, 100mb).
const BulkBodyBytes = 4 << 20

// documentBytes is the most one vector document takes as bulk JSON: its action line and
// a float32 of at most 15 characters and a comma per component.
func documentBytes(dim int) int { return 256 + 16*dim }

// IngestBufferBytes is the most an ingest holds at once: the bulk body, grown once to
// its cap plus a document, and the JSON encoder's copy of one document.
func IngestBufferBytes(dim int) int64 { return int64(BulkBodyBytes + 2*documentBytes(dim)) }

// ingestFrom is Ingest with document ids starting at firstID and the bulk operation op:
// index (write or overwrite) or create (write only ids that do not exist yet). A bulk
// request carries at most batchSize documents and BulkBodyBytes (and one document more).
func ingestFrom(ctx context.Context, c *opensearch.Client, index, field string, v dataset.Vectors, firstID, batchSize int, op string, progress func(done int)) error {
	var buf bytes.Buffer
	buf.Grow(BulkBodyBytes + documentBytes(v.Dim))
	enc := json.NewEncoder(&buf)
	first := 0
	for i := 0; i < v.Len(); i++ {
		buf.WriteString(`{"` + op + `":{"_index":`)
		buf.WriteString(strconv.Quote(index))
		buf.WriteString(`,"_id":"`)
		buf.WriteString(strconv.Itoa(firstID + i))
		buf.WriteString("\"}}\n")
		if err := enc.Encode(map[string][]float32{field: v.At(i)}); err != nil {
			return err
		}
		if i+1 < v.Len() && i+1-first < batchSize && buf.Len() < BulkBodyBytes {
			continue
		}
		if err := bulkRetrying(ctx, c, buf.Bytes()); err != nil {
			return fmt.Errorf("bulk of vectors %d-%d: %w", firstID+first, firstID+i, err)
		}
		buf.Reset()
		first = i + 1
		if progress != nil {
			progress(first)
		}
	}
	return nil
}

// bulkRejectionBackoff is the first wait before a rejected bulk is sent again; it doubles
// up to bulkRejectionBackoffMax, for at most bulkAttempts sends in all.
var (
	bulkRejectionBackoff    = 250 * time.Millisecond
	bulkRejectionBackoffMax = 8 * time.Second
)

const bulkAttempts = 8

// bulkRetrying sends one bulk body, and again after a growing wait while OpenSearch
// refuses it only for now: the request answered 429 or 5xx, or every failed item 429 (a
// loaded node's full write queue or indexing-pressure limit). Sending the whole body again
// is safe: ids are fixed, an index op overwrites the same document and a create op's
// existing id is not a failure. opensearchutil.BulkIndexer is not used: it retries no
// rejected item either, and copies each document into buffers of its own, where this
// loader's one buffer is what the Local runner's memory budget counts.
func bulkRetrying(ctx context.Context, c *opensearch.Client, body []byte) error {
	wait := bulkRejectionBackoff
	for attempt := 1; ; attempt++ {
		err := c.Bulk(ctx, body)
		var be *opensearch.BulkError
		refusedForNow := opensearch.IsRetryable(err) || errors.As(err, &be) && be.Retryable()
		if err == nil || attempt == bulkAttempts || !refusedForNow {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, bulkRejectionBackoffMax)
	}
}

// Differing counts the queries whose ids (SearchIDs' answers) differ between got and want,
// order included.
func Differing(got, want [][]int) int {
	n := 0
	for i := range want {
		if i >= len(got) || !slices.Equal(got[i], want[i]) {
			n++
		}
	}
	return n
}

// SearchIDs runs a k-NN query per query vector and returns the ids of the hits, in order.
func SearchIDs(ctx context.Context, c *opensearch.Client, index, field string, queries dataset.Vectors, k int) ([][]int, error) {
	out := make([][]int, queries.Len())
	for q := 0; q < queries.Len(); q++ {
		res, err := c.Search(ctx, index, opensearch.KNNQuery(field, queries.At(q), k))
		if err != nil {
			return nil, fmt.Errorf("query %d: %w", q, err)
		}
		for _, h := range res.Hits {
			id, err := strconv.Atoi(h.ID)
			if err != nil {
				return nil, fmt.Errorf("query %d: hit id %q is not a vector position", q, h.ID)
			}
			out[q] = append(out[q], id)
		}
	}
	return out, nil
}
