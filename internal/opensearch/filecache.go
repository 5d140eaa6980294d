package opensearch

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sort"
)

// FileCacheNode is one node's roles and, on a node with a file cache (the warm role; search
// in OpenSearch 2.x), how much of the cache searchable snapshots use.
type FileCacheNode struct {
	Name  string
	Roles []string
	// UsedBytes and TotalBytes are nil on a node without a file cache.
	UsedBytes, TotalBytes *int64
}

// ServesRemoteSnapshots says the node can hold the shards of a searchable snapshot.
func (n FileCacheNode) ServesRemoteSnapshots() bool {
	return slices.Contains(n.Roles, "warm") || slices.Contains(n.Roles, "search")
}

// FileCacheNodes reads every node's roles and file cache figures in one request.
func (c *Client) FileCacheNodes(ctx context.Context) ([]FileCacheNode, error) {
	type cache struct {
		UsedInBytes  *int64 `json:"used_in_bytes"`
		TotalInBytes *int64 `json:"total_in_bytes"`
	}
	var stats struct {
		Nodes map[string]struct {
			Name  string   `json:"name"`
			Roles []string `json:"roles"`
			// aggregate_file_cache in 3.x, file_cache in 2.x.
			Aggregate *cache `json:"aggregate_file_cache"`
			Legacy    *cache `json:"file_cache"`
		} `json:"nodes"`
	}
	const path = "/_nodes/stats/file_cache?filter_path=nodes.*.name,nodes.*.roles,nodes.*.aggregate_file_cache.used_in_bytes,nodes.*.aggregate_file_cache.total_in_bytes,nodes.*.file_cache.used_in_bytes,nodes.*.file_cache.total_in_bytes"
	if err := c.do(ctx, http.MethodGet, path, nil, &stats); err != nil {
		return nil, err
	}
	out := make([]FileCacheNode, 0, len(stats.Nodes))
	for _, n := range stats.Nodes {
		node := FileCacheNode{Name: n.Name, Roles: n.Roles}
		if fc := cmp.Or(n.Aggregate, n.Legacy); fc != nil && fc.TotalInBytes != nil && *fc.TotalInBytes > 0 {
			node.UsedBytes, node.TotalBytes = fc.UsedInBytes, fc.TotalInBytes
		}
		out = append(out, node)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
