package opensearch

import (
	"context"
	"net/http"
	"net/url"
)

// RemoteStoreStats is how far an index's remote store is behind its shards, over every
// shard copy: the largest lag and the failures summed.
type RemoteStoreStats struct {
	// RefreshLagMillis: the oldest local refresh whose segments are not uploaded yet.
	RefreshLagMillis int64
	// BytesLag: segment bytes refreshed locally and not uploaded yet.
	BytesLag int64
	// FailedUploads of segments and translog since the shards started.
	FailedUploads int64
}

// RemoteStoreStats reads _remotestore/stats of a remote-backed index.
func (c *Client) RemoteStoreStats(ctx context.Context, index string) (RemoteStoreStats, error) {
	type uploads struct {
		TotalUploads struct {
			Failed int64 `json:"failed"`
		} `json:"total_uploads"`
	}
	var resp struct {
		Indices map[string]struct {
			Shards map[string][]struct {
				Segment struct {
					Upload struct {
						uploads
						RefreshTimeLagInMillis int64 `json:"refresh_time_lag_in_millis"`
						BytesLag               int64 `json:"bytes_lag"`
					} `json:"upload"`
				} `json:"segment"`
				Translog struct {
					Upload uploads `json:"upload"`
				} `json:"translog"`
			} `json:"shards"`
		} `json:"indices"`
	}
	if err := c.do(ctx, http.MethodGet, "/_remotestore/stats/"+url.PathEscape(index), nil, &resp); err != nil {
		return RemoteStoreStats{}, err
	}
	var out RemoteStoreStats
	for _, copies := range resp.Indices[index].Shards {
		for _, s := range copies {
			up := s.Segment.Upload
			out.RefreshLagMillis = max(out.RefreshLagMillis, up.RefreshTimeLagInMillis)
			out.BytesLag = max(out.BytesLag, up.BytesLag)
			out.FailedUploads += up.TotalUploads.Failed + s.Translog.Upload.TotalUploads.Failed
		}
	}
	return out, nil
}

// RestoreFromRemoteStore recovers the index's unassigned primaries from the remote store:
// every acknowledged write, which the translog uploaded before acknowledging it.
func (c *Client) RestoreFromRemoteStore(ctx context.Context, index string) error {
	return c.do(ctx, http.MethodPost, "/_remotestore/_restore", map[string]any{"indices": []string{index}}, nil)
}

// RemoteStoreRepositories are the repositories a remote-backed node stores segments,
// translog and cluster state in, from its node attributes; empty when it has none.
type RemoteStoreRepositories struct {
	Segment, Translog, State string
}

// RemoteStoreOf reads a node's remote store repositories from its attributes.
func RemoteStoreOf(attributes map[string]string) RemoteStoreRepositories {
	return RemoteStoreRepositories{
		Segment:  attributes["remote_store.segment.repository"],
		Translog: attributes["remote_store.translog.repository"],
		State:    attributes["remote_store.state.repository"],
	}
}
