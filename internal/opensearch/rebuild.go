package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// SeqNos are an index's primary shards' local checkpoints, by shard number: every write
// of a shard up to its checkpoint is processed, so a refresh after this call makes them all
// searchable; a write above it may not be searchable yet, or came later. -1 for a shard
// without writes.
func (c *Client) SeqNos(ctx context.Context, index string) ([]int64, error) {
	var resp struct {
		Indices map[string]struct {
			Shards map[string][]struct {
				Routing struct {
					Primary bool `json:"primary"`
				} `json:"routing"`
				SeqNo struct {
					LocalCheckpoint int64 `json:"local_checkpoint"`
				} `json:"seq_no"`
			} `json:"shards"`
		} `json:"indices"`
	}
	if err := c.do(ctx, http.MethodGet, "/"+url.PathEscape(index)+"/_stats/docs?level=shards", nil, &resp); err != nil {
		return nil, err
	}
	for _, idx := range resp.Indices {
		checkpoints := make([]int64, len(idx.Shards))
		seen := make([]bool, len(idx.Shards))
		for shard, copies := range idx.Shards {
			n, err := strconv.Atoi(shard)
			if err != nil || n >= len(checkpoints) {
				return nil, fmt.Errorf("index %s: unexpected shard %q", index, shard)
			}
			for _, cp := range copies {
				if cp.Routing.Primary {
					checkpoints[n], seen[n] = cp.SeqNo.LocalCheckpoint, true
				}
			}
		}
		if i := slices.Index(seen, false); i >= 0 {
			return nil, fmt.Errorf("index %s: shard %d has no started primary", index, i)
		}
		return checkpoints, nil
	}
	return nil, fmt.Errorf("index %s: no shard statistics", index)
}

// ReindexQuery selects the documents of a source index written after afterSeqNo (on their
// shard): all of them for -1.
func ReindexQuery(afterSeqNo int64) map[string]any {
	if afterSeqNo < 0 {
		return map[string]any{"match_all": map[string]any{}}
	}
	return map[string]any{"range": map[string]any{"_seq_no": map[string]any{"gt": afterSeqNo}}}
}

// StartReindex starts a _reindex task copying the documents of one shard of source (of
// shards) written after afterSeqNo into target, overwriting what target holds under the
// same ids, paced at docsPerSecond (0: unthrottled). A slice of as many slices as the index
// has shards reads exactly that shard, so each shard is copied from its own sequence
// number. It returns the task's id.
func (c *Client) StartReindex(ctx context.Context, source, target string, shard, shards int, afterSeqNo int64, docsPerSecond int) (string, error) {
	rps := "-1"
	if docsPerSecond > 0 {
		rps = strconv.Itoa(docsPerSecond)
	}
	var resp struct {
		Task string `json:"task"`
	}
	if err := c.do(ctx, http.MethodPost, "/_reindex?wait_for_completion=false&requests_per_second="+rps, reindexBody(source, target, shard, shards, afterSeqNo), &resp); err != nil {
		return "", err
	}
	return resp.Task, nil
}

// Reindex copies as StartReindex does, unthrottled, and returns once done: for a copy short
// enough to wait for (no task to poll, no result stored in .tasks).
func (c *Client) Reindex(ctx context.Context, source, target string, shard, shards int, afterSeqNo int64) (Task, error) {
	var resp struct {
		Took     int64 `json:"took"`
		Total    int64 `json:"total"`
		Created  int64 `json:"created"`
		Updated  int64 `json:"updated"`
		Failures []struct {
			Index string `json:"index"`
			ID    string `json:"id"`
			Cause any    `json:"cause"`
		} `json:"failures"`
	}
	if err := c.do(ctx, http.MethodPost, "/_reindex?wait_for_completion=true", reindexBody(source, target, shard, shards, afterSeqNo), &resp); err != nil {
		return Task{}, err
	}
	t := Task{Completed: true, Total: resp.Total, Done: resp.Created + resp.Updated, Running: time.Duration(resp.Took) * time.Millisecond}
	for _, f := range resp.Failures {
		t.Failures = append(t.Failures, fmt.Sprintf("%s/%s: %v", f.Index, f.ID, f.Cause))
	}
	return t, nil
}

func reindexBody(source, target string, shard, shards int, afterSeqNo int64) map[string]any {
	src := map[string]any{"index": source, "query": ReindexQuery(afterSeqNo), "size": 1000}
	if shards > 1 {
		src["slice"] = map[string]any{"id": shard, "max": shards}
	}
	return map[string]any{"source": src, "dest": map[string]any{"index": target, "op_type": "index"}}
}

// ReindexDescription is how OpenSearch describes a _reindex task from source to target.
func ReindexDescription(source, target string) string {
	return "reindex from [" + source + "] to [" + target + "]"
}

// Task is a task's progress, and its outcome once completed (OpenSearch keeps a completed
// task's result in its .tasks index).
type Task struct {
	ID          string
	Description string
	Completed   bool
	Total       int64
	// Done counts the documents written so far (created and updated).
	Done    int64
	Running time.Duration
	// Failures are the documents or searches that failed, and Error a task that failed
	// as a whole; both empty for a task that succeeded.
	Failures []string
	Error    string
}

type taskStatus struct {
	Total   int64 `json:"total"`
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

type taskInfo struct {
	Node         string     `json:"node"`
	ID           int64      `json:"id"`
	Description  string     `json:"description"`
	RunningNanos int64      `json:"running_time_in_nanos"`
	Status       taskStatus `json:"status"`
	Cancelled    bool       `json:"cancelled"`
}

func (t taskInfo) task() Task {
	return Task{ID: t.Node + ":" + strconv.FormatInt(t.ID, 10), Description: t.Description, Total: t.Status.Total,
		Done: t.Status.Created + t.Status.Updated, Running: time.Duration(t.RunningNanos)}
}

// GetTask reads a task; a task OpenSearch no longer knows (its node restarted before it
// completed) is an error for which IsNotFound holds.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var resp struct {
		Completed bool     `json:"completed"`
		Task      taskInfo `json:"task"`
		Error     *struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
		Response *struct {
			Failures []struct {
				Index string `json:"index"`
				ID    string `json:"id"`
				Cause any    `json:"cause"`
			} `json:"failures"`
		} `json:"response"`
	}
	if err := c.do(ctx, http.MethodGet, "/_tasks/"+url.PathEscape(id), nil, &resp); err != nil {
		return Task{}, err
	}
	t := resp.Task.task()
	t.Completed = resp.Completed
	if resp.Error != nil {
		t.Error = resp.Error.Type + ": " + resp.Error.Reason
	}
	if resp.Response != nil {
		for _, f := range resp.Response.Failures {
			t.Failures = append(t.Failures, fmt.Sprintf("%s/%s: %v", f.Index, f.ID, f.Cause))
		}
	}
	if resp.Task.Cancelled && t.Error == "" {
		t.Error = "cancelled"
	}
	return t, nil
}

// RunningReindexes lists the _reindex tasks running now.
func (c *Client) RunningReindexes(ctx context.Context) ([]Task, error) {
	var resp struct {
		Nodes map[string]struct {
			Tasks map[string]taskInfo `json:"tasks"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_tasks?detailed=true&actions="+url.QueryEscape("indices:data/write/reindex"), nil, &resp); err != nil {
		return nil, err
	}
	var out []Task
	for _, n := range resp.Nodes {
		for _, t := range n.Tasks {
			out = append(out, t.task())
		}
	}
	return out, nil
}

// CancelTask cancels a running task and waits for it to stop, so that none of its writes
// lands after the call.
func (c *Client) CancelTask(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodPost, "/_tasks/"+url.PathEscape(id)+"/_cancel?wait_for_completion=true", nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Clone copies a write-blocked index into a new one with the given settings (hard links
// where the filesystem allows), and waits for its primaries to start.
func (c *Client) Clone(ctx context.Context, source, target string, settings map[string]any) error {
	return c.do(ctx, http.MethodPost, "/"+url.PathEscape(source)+"/_clone/"+url.PathEscape(target)+"?wait_for_active_shards=1", map[string]any{"settings": settings}, nil)
}

// AliasAction is one action of an _aliases request.
type AliasAction map[string]any

// AddAlias points alias at index, as the index writes through the alias go to.
func AddAlias(index, alias string) AliasAction {
	return AliasAction{"add": map[string]any{"index": index, "alias": alias, "is_write_index": true}}
}

// RemoveAlias takes alias off index.
func RemoveAlias(index, alias string) AliasAction {
	return AliasAction{"remove": map[string]any{"index": index, "alias": alias}}
}

// RemoveIndex deletes index in the same request as the other actions, so that its name is
// free for an alias at the same instant.
func RemoveIndex(index string) AliasAction {
	return AliasAction{"remove_index": map[string]any{"index": index}}
}

// UpdateAliases applies the actions at once: OpenSearch applies all or none, and a search
// sees the aliases before or after, never in between.
func (c *Client) UpdateAliases(ctx context.Context, actions ...AliasAction) error {
	return c.do(ctx, http.MethodPost, "/_aliases", map[string]any{"actions": actions}, nil)
}

// Warmup loads an index's native k-NN graphs into memory, so its first queries do not pay
// for it.
func (c *Client) Warmup(ctx context.Context, index string) error {
	return c.do(ctx, http.MethodGet, "/_plugins/_knn/warmup/"+url.PathEscape(index), nil, nil)
}

// DocCount is the number of documents of an index, as searches see them.
func (c *Client) DocCount(ctx context.Context, index string) (int64, error) {
	var out struct {
		Count int64 `json:"count"`
	}
	err := c.do(ctx, http.MethodPost, "/"+url.PathEscape(index)+"/_count", nil, &out)
	return out.Count, err
}

// ExtraIDs are the ids of documents in index that other lacks: a scroll over index's ids,
// each page counted in other, and looked up id by id only when other lacks some of them.
func (c *Client) ExtraIDs(ctx context.Context, index, other string) ([]string, error) {
	const page = 10000 // index.max_result_window's default
	type hits struct {
		ScrollID string `json:"_scroll_id"`
		Hits     struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
			Hits []Hit `json:"hits"`
		} `json:"hits"`
	}
	var resp hits
	if err := c.do(ctx, http.MethodPost, "/"+url.PathEscape(index)+"/_search?scroll=1m", map[string]any{"size": page, "_source": false, "sort": []string{"_doc"}}, &resp); err != nil {
		return nil, err
	}
	defer func() {
		if resp.ScrollID != "" {
			_ = c.do(context.WithoutCancel(ctx), http.MethodDelete, "/_search/scroll", map[string]any{"scroll_id": resp.ScrollID}, nil)
		}
	}()
	var extra []string
	for len(resp.Hits.Hits) > 0 {
		ids := make([]string, len(resp.Hits.Hits))
		for i, h := range resp.Hits.Hits {
			ids[i] = h.ID
		}
		query := map[string]any{"ids": map[string]any{"values": ids}}
		var counted hits
		if err := c.do(ctx, http.MethodPost, "/"+url.PathEscape(other)+"/_search", map[string]any{"size": 0, "track_total_hits": true, "query": query}, &counted); err != nil {
			return nil, err
		}
		if counted.Hits.Total.Value < int64(len(ids)) {
			found, err := c.Search(ctx, other, map[string]any{"size": len(ids), "_source": false, "query": query})
			if err != nil {
				return nil, err
			}
			have := make(map[string]bool, len(found.Hits))
			for _, h := range found.Hits {
				have[h.ID] = true
			}
			for _, id := range ids {
				if !have[id] {
					extra = append(extra, id)
				}
			}
		}
		next := hits{}
		if err := c.do(ctx, http.MethodPost, "/_search/scroll", map[string]any{"scroll": "1m", "scroll_id": resp.ScrollID}, &next); err != nil {
			return nil, err
		}
		resp = next
	}
	return extra, nil
}

// DeleteDocuments deletes documents of an index by id.
func (c *Client) DeleteDocuments(ctx context.Context, index string, ids []string) error {
	var b bytes.Buffer
	for _, id := range ids {
		line, err := json.Marshal(map[string]any{"delete": map[string]string{"_index": index, "_id": id}})
		if err != nil {
			return err
		}
		b.Write(append(line, '\n'))
	}
	return c.Bulk(ctx, b.Bytes())
}
