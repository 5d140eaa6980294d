package bench

import (
	"context"
	"fmt"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// RefreshInterval is the index setting a load turns off while it writes.
const RefreshInterval = "index.refresh_interval"

// LoadInSegments ingests v so that each shard ends with about `segments` segments: refresh
// is turned off, the data goes in `segments` chunks with a refresh after each (one new
// segment per shard per refresh), and a force-merge caps what merging left. Concurrent
// search only has slices to split when there are several segments.
//
// Documents are created, never overwritten: an id that exists keeps its document. The
// refresh interval is put back as it was when the load ends, however it ends.
func LoadInSegments(ctx context.Context, c *opensearch.Client, index, field string, v dataset.Vectors, segments, batch int, progress func(done int)) (err error) {
	if segments < 1 {
		return fmt.Errorf("segments must be at least 1, got %d", segments)
	}
	idx, err := c.GetIndex(ctx, index)
	if err != nil {
		return err
	}
	var refresh any // nil resets an interval that was not set
	if r, ok := idx.Settings[RefreshInterval]; ok {
		refresh = r
	}
	if err := c.PutSettings(ctx, index, map[string]any{RefreshInterval: "-1"}); err != nil {
		return err
	}
	defer func() {
		if rerr := c.PutSettings(context.WithoutCancel(ctx), index, map[string]any{RefreshInterval: refresh}); err == nil {
			err = rerr
		}
	}()
	chunk := (v.Len() + segments - 1) / segments
	for start := 0; start < v.Len(); start += chunk {
		part := dataset.Vectors{Dim: v.Dim, Data: v.Data[start*v.Dim : min(start+chunk, v.Len())*v.Dim]}
		offset := start
		if err := ingestFrom(ctx, c, index, field, part, offset, batch, "create", func(done int) {
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
