package opensearch

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"time"
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
	// Nodes are the names of the nodes summed, sorted.
	Nodes []string
}

// CPUPercent is CPU time used over elapsed wall time, in percent of the processors (100 is
// every processor busy throughout).
func CPUPercent(cpuMillis int64, elapsed time.Duration, processors int) float64 {
	return float64(cpuMillis) / (float64(elapsed.Milliseconds()) * float64(processors)) * 100
}

// nodesPath is the _nodes API path of a node specification ("" for every node): node
// names, ids, attributes as attr:value, wildcards, comma-separated.
func nodesPath(nodes string) string {
	if nodes == "" {
		return "/_nodes"
	}
	return "/_nodes/" + url.PathEscape(nodes)
}

// NodeStats reads process CPU, processor counts and the index_searcher pool of the nodes
// the specification selects ("" every node), in two requests.
func (c *Client) NodeStats(ctx context.Context, nodes string) (NodeStats, error) {
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
	if err := c.do(ctx, http.MethodGet, nodesPath(nodes)+"/stats/process,thread_pool?filter_path=nodes.*.process.cpu,nodes.*.thread_pool.index_searcher", nil, &stats); err != nil {
		return NodeStats{}, err
	}
	var info struct {
		Nodes map[string]struct {
			Name string `json:"name"`
			OS   struct {
				AvailableProcessors int `json:"available_processors"`
			} `json:"os"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, nodesPath(nodes)+"/os?filter_path=nodes.*.name,nodes.*.os.available_processors", nil, &info); err != nil {
		return NodeStats{}, err
	}
	var out NodeStats
	for _, n := range stats.Nodes {
		out.ProcessCPUMillis += n.Process.CPU.TotalInMillis
		out.SearcherCompleted += n.ThreadPool["index_searcher"].Completed
	}
	for _, n := range info.Nodes {
		out.Processors += n.OS.AvailableProcessors
		out.Nodes = append(out.Nodes, n.Name)
	}
	sort.Strings(out.Nodes)
	return out, nil
}

// NodeVariant is what one node reports about the k-NN library it runs with.
type NodeVariant struct {
	// Name is node.name (the pod's name on a managed cluster).
	Name string
	// Version is the OpenSearch version the node runs.
	Version string
	// Attributes are the node's custom attributes (node.attr.*).
	Attributes map[string]string
	// Disabled are the knn.faiss.<variant>.disabled settings the node started with as true.
	Disabled []string
	// JVMArguments are the JVM's input arguments.
	JVMArguments []string
}

// NodeVariants reads the version, attributes, k-NN variant settings and JVM arguments of
// the nodes the specification selects ("" every node), as the nodes started with them, in
// one request.
func (c *Client) NodeVariants(ctx context.Context, nodes string) ([]NodeVariant, error) {
	var info struct {
		Nodes map[string]struct {
			Name       string            `json:"name"`
			Version    string            `json:"version"`
			Attributes map[string]string `json:"attributes"`
			Settings   struct {
				KNN struct {
					Faiss map[string]struct {
						Disabled string `json:"disabled"`
					} `json:"faiss"`
				} `json:"knn"`
			} `json:"settings"`
			JVM struct {
				InputArguments []string `json:"input_arguments"`
			} `json:"jvm"`
		} `json:"nodes"`
	}
	path := nodesPath(nodes) + "/settings,jvm?filter_path=nodes.*.name,nodes.*.version,nodes.*.attributes,nodes.*.settings.knn.faiss,nodes.*.jvm.input_arguments"
	if err := c.do(ctx, http.MethodGet, path, nil, &info); err != nil {
		return nil, err
	}
	out := make([]NodeVariant, 0, len(info.Nodes))
	for _, n := range info.Nodes {
		v := NodeVariant{Name: n.Name, Version: n.Version, Attributes: n.Attributes, JVMArguments: n.JVM.InputArguments}
		for variant, s := range n.Settings.KNN.Faiss {
			if s.Disabled == "true" {
				v.Disabled = append(v.Disabled, "knn.faiss."+variant+".disabled")
			}
		}
		sort.Strings(v.Disabled)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
