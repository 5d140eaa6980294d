package opensearch

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// PutRepository registers (or updates) a snapshot repository; OpenSearch verifies it can
// write there before answering.
func (c *Client) PutRepository(ctx context.Context, name, typ string, settings map[string]any) error {
	return c.do(ctx, http.MethodPut, "/_snapshot/"+url.PathEscape(name), map[string]any{"type": typ, "settings": settings}, nil)
}

// CreateSnapshot starts a snapshot of indices and returns at once.
func (c *Client) CreateSnapshot(ctx context.Context, repo, snap string, indices []string, metadata map[string]any) error {
	body := map[string]any{"indices": strings.Join(indices, ","), "include_global_state": false, "metadata": metadata}
	return c.do(ctx, http.MethodPut, "/_snapshot/"+url.PathEscape(repo)+"/"+url.PathEscape(snap)+"?wait_for_completion=false", body, nil)
}

// SnapshotInfo is a snapshot as OpenSearch reports it.
type SnapshotInfo struct {
	State      string // IN_PROGRESS, SUCCESS, FAILED, PARTIAL
	Indices    []string
	Start, End time.Time
	Shards     struct{ Total, Successful, Failed int32 }
	Failures   []string
	SizeBytes  int64
	// Shallow: a shallow copy of remote-backed indexes (remote_store_index_shallow_copy).
	Shallow bool
	// Progress is read while the snapshot runs.
	Progress SnapshotProgress
}

// SnapshotProgress is how far a running snapshot has come: shards done and file bytes
// processed, of the totals.
type SnapshotProgress struct {
	ShardsDone, ShardsTotal int32
	BytesDone, BytesTotal   int64
}

// GetSnapshot reads a snapshot's state, shards and failures, and its size once done.
func (c *Client) GetSnapshot(ctx context.Context, repo, snap string) (SnapshotInfo, error) {
	var resp struct {
		Snapshots []struct {
			State             string   `json:"state"`
			Indices           []string `json:"indices"`
			Shallow           bool     `json:"remote_store_index_shallow_copy"`
			StartTimeInMillis int64    `json:"start_time_in_millis"`
			EndTimeInMillis   int64    `json:"end_time_in_millis"`
			Shards            struct {
				Total      int32 `json:"total"`
				Successful int32 `json:"successful"`
				Failed     int32 `json:"failed"`
			} `json:"shards"`
			Failures []struct {
				Index  string `json:"index"`
				Reason string `json:"reason"`
			} `json:"failures"`
		} `json:"snapshots"`
	}
	path := "/_snapshot/" + url.PathEscape(repo) + "/" + url.PathEscape(snap)
	if err := c.do(ctx, http.MethodGet, path, nil, &resp); err != nil {
		return SnapshotInfo{}, err
	}
	if len(resp.Snapshots) == 0 {
		return SnapshotInfo{}, &APIError{Status: 404, Type: "snapshot_missing_exception", Reason: "no snapshot " + snap}
	}
	s := resp.Snapshots[0]
	info := SnapshotInfo{State: s.State, Indices: s.Indices, Start: time.UnixMilli(s.StartTimeInMillis), Shallow: s.Shallow}
	if s.EndTimeInMillis > 0 {
		info.End = time.UnixMilli(s.EndTimeInMillis)
	}
	info.Shards.Total, info.Shards.Successful, info.Shards.Failed = s.Shards.Total, s.Shards.Successful, s.Shards.Failed
	for _, f := range s.Failures {
		info.Failures = append(info.Failures, f.Index+": "+f.Reason)
	}
	if info.State != "SUCCESS" && info.State != "IN_PROGRESS" {
		return info, nil
	}
	var status struct {
		Snapshots []struct {
			ShardsStats struct {
				Done  int32 `json:"done"`
				Total int32 `json:"total"`
			} `json:"shards_stats"`
			Stats struct {
				Incremental, Processed, Total struct {
					SizeInBytes int64 `json:"size_in_bytes"`
				}
			} `json:"stats"`
		} `json:"snapshots"`
	}
	if err := c.do(ctx, http.MethodGet, path+"/_status", nil, &status); err != nil {
		return info, err
	}
	if len(status.Snapshots) > 0 {
		st := status.Snapshots[0]
		info.SizeBytes = st.Stats.Incremental.SizeInBytes
		info.Progress = SnapshotProgress{ShardsDone: st.ShardsStats.Done, ShardsTotal: st.ShardsStats.Total,
			BytesDone: st.Stats.Processed.SizeInBytes, BytesTotal: st.Stats.Total.SizeInBytes}
	}
	return info, nil
}

// RunningSnapshot reads snap among the snapshots running now, from the cluster state (GET
// _snapshot/_status, which does not touch any repository): the state and progress of a
// running snapshot whose repository cannot be read. ok is false when it is not running.
func (c *Client) RunningSnapshot(ctx context.Context, repo, snap string) (info SnapshotInfo, ok bool, err error) {
	var status struct {
		Snapshots []struct {
			Snapshot    string `json:"snapshot"`
			Repository  string `json:"repository"`
			State       string `json:"state"`
			ShardsStats struct {
				Done  int32 `json:"done"`
				Total int32 `json:"total"`
			} `json:"shards_stats"`
			Stats struct {
				Processed, Total struct {
					SizeInBytes int64 `json:"size_in_bytes"`
				}
			} `json:"stats"`
		} `json:"snapshots"`
	}
	if err := c.do(ctx, http.MethodGet, "/_snapshot/_status", nil, &status); err != nil {
		return SnapshotInfo{}, false, err
	}
	for _, s := range status.Snapshots {
		if s.Snapshot == snap && s.Repository == repo {
			return SnapshotInfo{State: "IN_PROGRESS", Progress: SnapshotProgress{ShardsDone: s.ShardsStats.Done, ShardsTotal: s.ShardsStats.Total,
				BytesDone: s.Stats.Processed.SizeInBytes, BytesTotal: s.Stats.Total.SizeInBytes}}, true, nil
		}
	}
	return SnapshotInfo{}, false, nil
}

// DeleteSnapshot deletes a snapshot; a missing one is not an error.
func (c *Client) DeleteSnapshot(ctx context.Context, repo, snap string) error {
	err := c.do(ctx, http.MethodDelete, "/_snapshot/"+url.PathEscape(repo)+"/"+url.PathEscape(snap), nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Restore starts restoring index source of a snapshot under the name target, with
// indexSettings (if any) set on the restored index as it is created.
func (c *Client) Restore(ctx context.Context, repo, snap, source, target string, remoteSnapshot bool, indexSettings map[string]any) error {
	body := map[string]any{
		"indices": source, "include_global_state": false, "include_aliases": false,
		"rename_pattern": "^" + regexpQuote(source) + "$", "rename_replacement": target,
	}
	if len(indexSettings) > 0 {
		body["index_settings"] = indexSettings
	}
	if remoteSnapshot {
		// A searchable snapshot: the shards read the repository through the file cache of
		// warm nodes instead of copying the files.
		body["storage_type"] = "remote_snapshot"
	}
	return c.do(ctx, http.MethodPost, "/_snapshot/"+url.PathEscape(repo)+"/"+url.PathEscape(snap)+"/_restore", body, nil)
}

// regexpQuote escapes an index name for OpenSearch's (Java) rename_pattern; index names
// allow only lower-case letters, digits and ._-, of which . is special.
func regexpQuote(s string) string { return strings.ReplaceAll(s, ".", `\.`) }

// SnapshotIndexShards is the number of shards index has in a snapshot; a snapshot that
// does not hold the index answers 404.
func (c *Client) SnapshotIndexShards(ctx context.Context, repo, snap, index string) (int, error) {
	var status struct {
		Snapshots []struct {
			Indices map[string]struct {
				ShardsStats struct {
					Total int `json:"total"`
				} `json:"shards_stats"`
			} `json:"indices"`
		} `json:"snapshots"`
	}
	if err := c.do(ctx, http.MethodGet, "/_snapshot/"+url.PathEscape(repo)+"/"+url.PathEscape(snap)+"/_status", nil, &status); err != nil {
		return 0, err
	}
	if len(status.Snapshots) > 0 {
		if idx, ok := status.Snapshots[0].Indices[index]; ok {
			return idx.ShardsStats.Total, nil
		}
	}
	return 0, &APIError{Status: 404, Type: "index_not_found_exception", Reason: "snapshot " + snap + " holds no index " + index}
}

// RestoredFrom says which snapshot the index's shards were recovered from, as long as
// OpenSearch still remembers (until a shard recovers again, e.g. after a node restart);
// empty strings when they were not restored.
func (c *Client) RestoredFrom(ctx context.Context, index string) (repo, snap string, err error) {
	var resp map[string]struct {
		Shards []struct {
			Type   string `json:"type"`
			Source struct {
				Repository string `json:"repository"`
				Snapshot   string `json:"snapshot"`
			} `json:"source"`
		} `json:"shards"`
	}
	if err := c.do(ctx, http.MethodGet, "/"+url.PathEscape(index)+"/_recovery", nil, &resp); err != nil {
		return "", "", err
	}
	for _, s := range resp[index].Shards {
		if s.Type == "SNAPSHOT" {
			return s.Source.Repository, s.Source.Snapshot, nil
		}
	}
	return "", "", nil
}

// SnapshotNames lists every snapshot in a repository (_snapshot/<repo>/_all).
func (c *Client) SnapshotNames(ctx context.Context, repo string) ([]string, error) {
	var resp struct {
		Snapshots []struct {
			Snapshot string `json:"snapshot"`
		} `json:"snapshots"`
	}
	if err := c.do(ctx, http.MethodGet, "/_snapshot/"+url.PathEscape(repo)+"/_all", nil, &resp); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(resp.Snapshots))
	for _, s := range resp.Snapshots {
		names = append(names, s.Snapshot)
	}
	return names, nil
}
