package bench

import (
	"context"
	"fmt"

	"github.com/vectorpilot/vectorpilot/internal/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// LoadInSegments ingests v so that each shard ends with about `segments` segments: refresh
// is turned off, the data goes in `segments` chunks with a refresh after each (one new
// segment per shard per refresh), and a force-merge caps what merging left. Concurrent
// search only has slices to split when there are several segments.
func LoadInSegments(ctx context.Context, c *opensearch.Client, index, field string, v dataset.Vectors, segments, batch int, progress func(done int)) error {
	if segments < 1 {
		return fmt.Errorf("segments must be at least 1, got %d", segments)
	}
	if err := c.PutSettings(ctx, index, map[string]any{"index.refresh_interval": "-1"}); err != nil {
		return err
	}
	chunk := (v.Len() + segments - 1) / segments
	for start := 0; start < v.Len(); start += chunk {
		part := dataset.Vectors{Dim: v.Dim, Data: v.Data[start*v.Dim : min(start+chunk, v.Len())*v.Dim]}
		offset := start
		if err := ingestFrom(ctx, c, index, field, part, offset, batch, func(done int) {
			if progress != nil {
				progress(offset + done)
			}
		}); err != nil {
			return err
		}
		if err := c.Refresh(ctx, index); err != nil {
			return err
		}
	}
	if err := c.ForceMerge(ctx, index, segments); err != nil {
		return err
	}
	return c.Refresh(ctx, index)
}
