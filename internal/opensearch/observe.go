package opensearch

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// IndexFigures are one index's counters and sizes, as the metrics collector reads them.
type IndexFigures struct {
	Health           string
	Docs             int64
	Segments         int64
	StoreBytes       int64
	QueryTotal       int64
	QueryTimeMillis  int64
	QueryCacheHits   int64
	QueryCacheMisses int64
}

// NodeFigures are one node's figures.
type NodeFigures struct {
	CPUPercent         float64
	HeapUsedBytes      int64
	HeapMaxBytes       int64
	SearcherActive     int64
	SearcherQueue      int64
	KNNGraphMemoryByte int64
	KNNCacheHits       int64
	KNNCacheMisses     int64
}

// ClusterFigures is everything the collector exports for one cluster, read in four
// requests whatever the number of indexes.
type ClusterFigures struct {
	Health                   string
	KNNCircuitBreakerTripped bool
	Indexes                  map[string]IndexFigures
	Nodes                    map[string]NodeFigures
}

// maxIndexPathBytes bounds the comma-joined index names of one stats request, well under
// OpenSearch's default 4 KB request line.
const maxIndexPathBytes = 2048

// pathBatches joins escaped index names with commas into parts of at most limit bytes (a
// single longer name makes a part of its own).
func pathBatches(names []string, limit int) []string {
	var out []string
	var cur strings.Builder
	for _, n := range names {
		e := url.PathEscape(n)
		if cur.Len() > 0 && cur.Len()+1+len(e) > limit {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(',')
		}
		cur.WriteString(e)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// Figures reads cluster health (with per-index health), index stats for the named indexes,
// node stats and k-NN stats.
func (c *Client) Figures(ctx context.Context, indexes []string) (ClusterFigures, error) {
	out := ClusterFigures{Indexes: map[string]IndexFigures{}, Nodes: map[string]NodeFigures{}}
	var health struct {
		Status  string `json:"status"`
		Indices map[string]struct {
			Status string `json:"status"`
		} `json:"indices"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/health?level=indices&filter_path=status,indices.*.status", nil, &health); err != nil {
		return out, err
	}
	out.Health = health.Status
	// One request per batch of names: a fleet's names in one URL would pass OpenSearch's
	// 4 KB request-line limit (http.max_initial_line_length).
	for _, batch := range pathBatches(indexes, maxIndexPathBytes) {
		var stats struct {
			Indices map[string]statsBody `json:"indices"`
		}
		path := "/" + batch + "/_stats/docs,segments,store,search,query_cache?ignore_unavailable=true&level=indices"
		if err := c.do(ctx, http.MethodGet, path, nil, &stats); err != nil {
			return out, err
		}
		for name, s := range stats.Indices {
			out.Indexes[name] = IndexFigures{
				Health: health.Indices[name].Status, Docs: s.Primaries.Docs.Count, Segments: s.Primaries.Segments.Count,
				StoreBytes: s.Total.Store.SizeInBytes, QueryTotal: s.Total.Search.QueryTotal, QueryTimeMillis: s.Total.Search.QueryMillis,
				QueryCacheHits: s.Total.QueryCache.HitCount, QueryCacheMisses: s.Total.QueryCache.MissCount,
			}
		}
	}
	var nodes struct {
		Nodes map[string]struct {
			Name    string `json:"name"`
			Process struct {
				CPU struct {
					Percent float64 `json:"percent"`
				} `json:"cpu"`
			} `json:"process"`
			JVM struct {
				Mem struct {
					HeapUsed int64 `json:"heap_used_in_bytes"`
					HeapMax  int64 `json:"heap_max_in_bytes"`
				} `json:"mem"`
			} `json:"jvm"`
			ThreadPool map[string]struct {
				Active int64 `json:"active"`
				Queue  int64 `json:"queue"`
			} `json:"thread_pool"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_nodes/stats/process,jvm,thread_pool?filter_path=nodes.*.name,nodes.*.process.cpu.percent,nodes.*.jvm.mem.heap_used_in_bytes,nodes.*.jvm.mem.heap_max_in_bytes,nodes.*.thread_pool.index_searcher", nil, &nodes); err != nil {
		return out, err
	}
	names := map[string]string{}
	for id, n := range nodes.Nodes {
		names[id] = n.Name
		s := n.ThreadPool["index_searcher"]
		out.Nodes[n.Name] = NodeFigures{CPUPercent: n.Process.CPU.Percent, HeapUsedBytes: n.JVM.Mem.HeapUsed, HeapMaxBytes: n.JVM.Mem.HeapMax, SearcherActive: s.Active, SearcherQueue: s.Queue}
	}
	var knn struct {
		CircuitBreakerTriggered bool `json:"circuit_breaker_triggered"`
		Nodes                   map[string]struct {
			GraphMemoryUsageKB int64 `json:"graph_memory_usage"`
			HitCount           int64 `json:"hit_count"`
			MissCount          int64 `json:"miss_count"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_plugins/_knn/stats?filter_path=circuit_breaker_triggered,nodes.*.graph_memory_usage,nodes.*.hit_count,nodes.*.miss_count", nil, &knn); err != nil {
		return out, err
	}
	out.KNNCircuitBreakerTripped = knn.CircuitBreakerTriggered
	for id, k := range knn.Nodes {
		n := out.Nodes[names[id]]
		n.KNNGraphMemoryByte, n.KNNCacheHits, n.KNNCacheMisses = k.GraphMemoryUsageKB*1024, k.HitCount, k.MissCount
		out.Nodes[names[id]] = n
	}
	return out, nil
}

// GraphMemoryBytes is the native memory the k-NN cache holds for an index's graphs, summed
// over the nodes (faiss and nmslib graphs; Lucene's are not in it).
func (c *Client) GraphMemoryBytes(ctx context.Context, index string) (int64, error) {
	var knn struct {
		Nodes map[string]struct {
			IndicesInCache map[string]struct {
				GraphMemoryUsageKB int64 `json:"graph_memory_usage"`
			} `json:"indices_in_cache"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_plugins/_knn/stats?filter_path=nodes.*.indices_in_cache", nil, &knn); err != nil {
		return 0, err
	}
	var total int64
	for _, n := range knn.Nodes {
		total += n.IndicesInCache[index].GraphMemoryUsageKB * 1024
	}
	return total, nil
}
