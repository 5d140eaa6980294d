package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Cell is one measured sweep cell: the tuner's measurement plus what explains it.
type Cell struct {
	autotune.Measurement
	// Variant names the configuration measured (see Variant); "" when the sweep had one.
	Variant string `json:"variant,omitempty"`
	Queries int    `json:"queries"`
	// SearcherTasksPerQuery is index_searcher tasks per query: 0 when concurrent search is
	// off, growing with the slices actually searched in parallel.
	SearcherTasksPerQuery float64 `json:"searcherTasksPerQuery"`
	// LoadGenCPUMsPerQuery is the benchmark process's own CPU per query; far below the
	// node's means the load generator was not the bottleneck.
	LoadGenCPUMsPerQuery float64 `json:"loadGenCpuMsPerQuery"`
	// NodeCPUMsPerQuery is the node's CPU per query, to compare with the generator's.
	NodeCPUMsPerQuery float64 `json:"nodeCpuMsPerQuery"`
}

// Report is a sweep's output: the tuner's input format, with detail per cell.
type Report struct {
	Index    string `json:"index"`
	Cores    int    `json:"cores"`
	Segments int    `json:"segments"`
	Results  []Cell `json:"results"`
}

// Table is the report as the tuner reads it.
func (r Report) Table() autotune.Table {
	t := autotune.Table{Cores: r.Cores, Segments: r.Segments}
	for _, c := range r.Results {
		t.Results = append(t.Results, c.Measurement)
	}
	return t
}

// Variant is one configuration a sweep compares on the same index, data and queries: its
// queries are served only by the nodes the specification selects (node names, attr:value,
// wildcards; OpenSearch's _only_nodes preference), and the CPU is read from those nodes.
// Pools with different SIMD settings, each holding a copy of every shard, are compared so.
type Variant struct {
	Name  string `json:"name"`
	Nodes string `json:"nodes"`
}

// SweepConfig says what to measure.
type SweepConfig struct {
	Index, Field string
	Queries      dataset.Vectors
	// Exact are the true neighbours of each query, for recall.
	Exact       [][]dataset.Neighbor
	K           int
	SliceCounts []indexspec.Slices
	Clients     []int
	// Variants are measured in turn under each slice setting; none: one configuration,
	// every node.
	Variants []Variant
	// Variant is the configuration Warmup and Measure run on (Sweep sets it).
	Variant Variant
	// Warmup runs before each cell's measurement and is not counted.
	Warmup, Duration time.Duration
	// NodesWarm says the nodes were warmed up already (by the run's sweep): no WarmNodes
	// before the first cell.
	NodesWarm bool
	// OnCell, when set, is called as each cell completes.
	OnCell func(Cell)
	// Body builds the search of one query vector; nil is an approximate k-NN query.
	Body func(vector []float32, k int) any
}

func (cfg SweepConfig) preference() string {
	if cfg.Variant.Nodes == "" {
		return ""
	}
	return opensearch.OnlyNodes(cfg.Variant.Nodes)
}

func (cfg SweepConfig) body(vector []float32) any {
	if cfg.Body != nil {
		return cfg.Body(vector, cfg.K)
	}
	return opensearch.KNNQuery(cfg.Field, vector, cfg.K)
}

// Sweep measures every slice setting under every client level, one cell at a time (cells
// never overlap on the index), each with closed-loop clients: every client sends its next
// query as soon as the previous answer arrives. It leaves the index's slice settings as it
// found them, whatever the outcome: a benchmark is no reason to change how an index serves,
// and the tuner takes the live setting for the one it applied.
func Sweep(ctx context.Context, c *opensearch.Client, cfg SweepConfig) (rep Report, err error) {
	if cfg.Queries.Len() == 0 || len(cfg.Exact) != cfg.Queries.Len() {
		return Report{}, errors.New("sweep needs queries and their exact neighbours")
	}
	stats, err := c.Stats(ctx, cfg.Index)
	if err != nil {
		return Report{}, err
	}
	live, err := c.GetIndex(ctx, cfg.Index)
	if err != nil {
		return Report{}, err
	}
	defer func() { err = errors.Join(err, restoreSlices(ctx, c, live)) }()
	rep = Report{Index: cfg.Index, Segments: int(stats.Segments)}
	// Each variant's nodes are warmed up once, under the heaviest load the sweep measures.
	warmed, mostClients := map[string]bool{}, 0
	for _, n := range cfg.Clients {
		mostClients = max(mostClients, n)
	}
	for _, s := range cfg.SliceCounts {
		if err := SetSlices(ctx, c, cfg.Index, s); err != nil {
			return rep, err
		}
		variants := cfg.Variants
		if len(variants) == 0 {
			variants = []Variant{{}}
		}
		for _, v := range variants {
			cfg.Variant = v
			if !cfg.NodesWarm && !warmed[v.Name] && len(cfg.Clients) > 0 {
				if err := WarmNodes(ctx, c, cfg, mostClients); err != nil {
					return rep, err
				}
				warmed[v.Name] = true
			}
			for _, clients := range cfg.Clients {
				if err := Warmup(ctx, c, cfg, clients); err != nil {
					return rep, err
				}
				cell, cores, err := Measure(ctx, c, cfg, s, clients)
				if err != nil {
					return rep, err
				}
				rep.Cores = cores
				rep.Results = append(rep.Results, cell)
				if cfg.OnCell != nil {
					cfg.OnCell(cell)
				}
			}
		}
	}
	return rep, nil
}

// restoreSlices puts the slice settings of live back (null for one it did not set), even
// when ctx is done: a cancelled run must not leave its last setting behind.
func restoreSlices(ctx context.Context, c *opensearch.Client, live *opensearch.Index) error {
	settings := map[string]any{}
	for k := range indexspec.Slices(2).Settings() {
		if v, ok := live.Settings[k]; ok {
			settings[k] = v
		} else {
			settings[k] = nil
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.PutSettings(ctx, live.Name, settings); err != nil {
		return fmt.Errorf("restoring the index's slice settings: %w", err)
	}
	return nil
}

// SetSlices applies a slice setting to the index.
func SetSlices(ctx context.Context, c *opensearch.Client, index string, setting indexspec.Slices) error {
	settings := map[string]any{}
	for k, v := range setting.Settings() {
		settings[k] = v
	}
	if err := c.PutSettings(ctx, index, settings); err != nil {
		return fmt.Errorf("applying %s: %w", setting, err)
	}
	return nil
}

// Warmup runs clients for cfg.Warmup and discards what they measured.
func Warmup(ctx context.Context, c *opensearch.Client, cfg SweepConfig, clients int) error {
	if cfg.Warmup <= 0 {
		return nil
	}
	_, err := runClients(ctx, c, cfg, clients, cfg.Warmup)
	return err
}

// WarmNodes searches with clients on cfg.Variant's nodes, in rounds of half cfg.Warmup,
// until their throughput stops rising — the mean of the last warmRounds rounds within
// warmPlateau of the rounds before — or for maxWarmUp, and discards what it measured. A
// node's first searches run on a cold JIT, HTTP path and caches: on a node started a
// moment before, one client's throughput rose from 90 searches per second in the first
// 1.5 s to 700 after 15 s and 970 after 45 s (100,000 × 64 Lucene HNSW), so the first cell
// of a sweep, after a warm-up of seconds, was measured up to 1.6 times as slow and costly
// as it is, skewing the tuner's table.
// Nothing is measured when cfg.Warmup is 0.
func WarmNodes(ctx context.Context, c *opensearch.Client, cfg SweepConfig, clients int) error {
	if cfg.Warmup <= 0 {
		return nil
	}
	var rates []float64
	round := max(cfg.Warmup/2, minWarmRound)
	for start := time.Now(); time.Since(start) < maxWarmUp; {
		load, err := runClients(ctx, c, cfg, clients, round)
		if err != nil {
			return err
		}
		if rates = append(rates, load.rate()); plateaued(rates) {
			return nil
		}
	}
	return nil
}

// plateaued says the throughput of WarmNodes' rounds stopped rising: the mean of the last
// warmRounds within warmPlateau of the mean of the rounds before them.
func plateaued(rates []float64) bool {
	n := len(rates)
	return n >= 2*warmRounds && mean(rates[n-warmRounds:]) <= mean(rates[n-2*warmRounds:n-warmRounds])*(1+warmPlateau)
}

// WarmNodes' rounds (half a cell's warm-up each) and bounds.
const (
	minWarmRound = 500 * time.Millisecond
	warmRounds   = 3
	warmPlateau  = 0.03
	maxWarmUp    = time.Minute
)

func mean(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// Measure runs one cell for cfg.Duration under the slice setting in force, on cfg.Variant's
// nodes, and brackets it with those nodes' stats for their CPU; it returns the cell and
// their core count.
func Measure(ctx context.Context, c *opensearch.Client, cfg SweepConfig, setting indexspec.Slices, clients int) (Cell, int, error) {
	before, err := c.NodeStats(ctx, cfg.Variant.Nodes)
	if err != nil {
		return Cell{}, 0, err
	}
	searched, err := c.Stats(ctx, cfg.Index)
	if err != nil {
		return Cell{}, 0, err
	}
	cpu0 := processCPU()
	load, err := runClients(ctx, c, cfg, clients, cfg.Duration)
	if err != nil {
		return Cell{}, 0, err
	}
	cpu1 := processCPU()
	after, err := c.NodeStats(ctx, cfg.Variant.Nodes)
	if err != nil {
		return Cell{}, 0, err
	}
	searchedAfter, err := c.Stats(ctx, cfg.Index)
	if err != nil {
		return Cell{}, 0, err
	}
	cell := load.cell(setting, clients, cfg)
	cell.InFlight = round2(autotune.InFlight(searchedAfter.SearchMillis-searched.SearchMillis, load.elapsed))
	cell.Variant = cfg.Variant.Name
	q := float64(load.queries)
	nodeCPUMs := float64(after.ProcessCPUMillis - before.ProcessCPUMillis)
	cell.CPUPercent = round2(opensearch.CPUPercent(after.ProcessCPUMillis-before.ProcessCPUMillis, load.elapsed, after.Processors))
	cell.NodeCPUMsPerQuery = round2(nodeCPUMs / q)
	cell.SearcherTasksPerQuery = round2(float64(after.SearcherCompleted-before.SearcherCompleted) / q)
	cell.LoadGenCPUMsPerQuery = round2(float64((cpu1 - cpu0).Microseconds()) / 1000 / q)
	return cell, after.Processors, nil
}

// loadResult is what the clients of one run saw.
type loadResult struct {
	hist    *hdrhistogram.Histogram
	queries int
	hits    int // neighbours found among the exact ones, summed over queries
	elapsed time.Duration
}

// rate is the throughput the clients reached.
func (l loadResult) rate() float64 {
	if l.elapsed <= 0 {
		return 0
	}
	return float64(l.queries) / l.elapsed.Seconds()
}

func (l loadResult) cell(setting indexspec.Slices, clients int, cfg SweepConfig) Cell {
	ms := func(p float64) float64 { return round2(float64(l.hist.ValueAtQuantile(p)) / 1000) }
	return Cell{
		Measurement: autotune.Measurement{
			SliceCount: setting, Clients: clients,
			P50Ms: ms(50), P90Ms: ms(90), P99Ms: ms(99),
			QPS:    round2(l.rate()),
			Recall: float64(int64(float64(l.hits)/float64(l.queries*cfg.K)*10000+0.5)) / 10000,
		},
		Queries: l.queries,
	}
}

// runClients runs n closed-loop clients for d; client i starts at query i and walks the
// query set, so clients do not ask the same thing at once.
func runClients(ctx context.Context, c *opensearch.Client, cfg SweepConfig, n int, d time.Duration) (loadResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Now().Add(d)
	type partial struct {
		hist          *hdrhistogram.Histogram
		queries, hits int
		err           error
	}
	parts := make([]partial, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := partial{hist: newHistogram()}
			for q := i; time.Now().Before(deadline); q = (q + n) % cfg.Queries.Len() {
				t0 := time.Now()
				res, err := c.SearchPreferring(ctx, cfg.Index, cfg.body(cfg.Queries.At(q)), cfg.preference())
				if err != nil {
					p.err = fmt.Errorf("query %d: %w", q, err)
					cancel()
					break
				}
				_ = p.hist.RecordValue(time.Since(t0).Microseconds())
				p.queries++
				p.hits += overlap(res.Hits, cfg.Exact[q])
			}
			parts[i] = p
		}(i)
	}
	wg.Wait()
	out := loadResult{hist: newHistogram(), elapsed: time.Since(start)}
	for _, p := range parts {
		if p.err != nil {
			return out, p.err
		}
		out.hist.Merge(p.hist)
		out.queries += p.queries
		out.hits += p.hits
	}
	if out.queries == 0 {
		return out, errors.New("no query completed in the cell's window")
	}
	return out, nil
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
}

func overlap(hits []opensearch.Hit, exact []dataset.Neighbor) int {
	want := make(map[int]bool, len(exact))
	for _, n := range exact {
		want[n.ID] = true
	}
	found := 0
	for _, h := range hits {
		if id, err := strconv.Atoi(h.ID); err == nil && want[id] {
			found++
		}
	}
	return found
}

// processCPU is the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
