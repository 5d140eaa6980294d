package opensearch

import (
	"context"
	"net/http"
)

// NodeStats are cluster-wide sums of the node figures the benchmark and the tuner read.
type NodeStats struct {
	// ProcessCPUMillis is the CPU time the OpenSearch processes have used, summed.
	ProcessCPUMillis int64
	// Processors is the number of processors the nodes may use, summed.
	Processors int
	// SearcherCompleted counts tasks finished on the index_searcher pool (one per slice of
	// a concurrent search).
	SearcherCompleted int64
}

// NodeStats reads process CPU, processor counts and the index_searcher pool of every node,
// in two requests.
func (c *Client) NodeStats(ctx context.Context) (NodeStats, error) {
	var stats struct {
		Nodes map[string]struct {
			Process struct {
				CPU struct {
					TotalInMillis int64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
			ThreadPool map[string]struct {
				Completed int64 `json:"completed"`
			} `json:"thread_pool"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_nodes/stats/process,thread_pool?filter_path=nodes.*.process.cpu,nodes.*.thread_pool.index_searcher", nil, &stats); err != nil {
		return NodeStats{}, err
	}
	var info struct {
		Nodes map[string]struct {
			OS struct {
				AvailableProcessors int `json:"available_processors"`
			} `json:"os"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_nodes/os?filter_path=nodes.*.os.available_processors", nil, &info); err != nil {
		return NodeStats{}, err
	}
	var out NodeStats
	for _, n := range stats.Nodes {
		out.ProcessCPUMillis += n.Process.CPU.TotalInMillis
		out.SearcherCompleted += n.ThreadPool["index_searcher"].Completed
	}
	for _, n := range info.Nodes {
		out.Processors += n.OS.AvailableProcessors
	}
	return out, nil
}
