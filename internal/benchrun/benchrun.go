// Package benchrun turns a BenchmarkRun into work for the benchmark engine and the
// engine's results back into the run's status. The Local runner (the operator) and the
// Argo steps (`vectorpilot bench` subcommands) both go through it, so a run measures the
// same thing wherever it runs.
package benchrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// ExitTransient is the exit code of a `vectorpilot bench` step that OpenSearch failed in a
// way that may pass (no answer, 429, 5xx: a node restarting, a full queue): sysexits'
// EX_TEMPFAIL. The Workflow templates retry the steps that exit with it, and no others.
const ExitTransient = 75

// Workload is a run's workload resolved against its index.
type Workload struct {
	Index, Field string
	// Engine is the field's k-NN engine.
	Engine string
	Dim    int
	// L2 says exact neighbours by L2 distance are the index's own notion of nearest, so
	// recall against them means something.
	L2        bool
	Generated *dataset.Spec
	HDF5      string
	Load      string
	K         int
	// Variants are compared under each slice setting (none: every node at once).
	Variants []bench.Variant
	// Shards of the index: the representation sweep's scratch indexes get as many.
	Shards   int
	Warmup   time.Duration
	Duration time.Duration
}

// Resolve reads the run's workload against the VectorIndex it names.
func Resolve(run *v1alpha1.BenchmarkRun, vi *v1alpha1.VectorIndex) (Workload, error) {
	wl := run.Spec.Workload
	var field *v1alpha1.VectorField
	for i := range vi.Spec.Fields {
		if wl.Field == "" || vi.Spec.Fields[i].Name == wl.Field {
			field = &vi.Spec.Fields[i]
			break
		}
	}
	if field == nil {
		return Workload{}, fmt.Errorf("VectorIndex %s has no vector field %q", vi.Name, wl.Field)
	}
	if field.DataType != "" && field.DataType != "float" {
		return Workload{}, fmt.Errorf("field %s has data type %s: the benchmark datasets are float vectors", field.Name, field.DataType)
	}
	w := Workload{
		Index: vi.OpenSearchIndexName(), Field: field.Name, Engine: field.Engine, Dim: int(field.Dimension), L2: field.SpaceType == "l2",
		Load: wl.Load, K: int(wl.K), Warmup: wl.Warmup.Duration, Duration: wl.Duration.Duration,
		Variants: Variants(run.Spec.Variants), Shards: int(vi.Spec.Shards),
	}
	if w.K == 0 {
		w.K = 10
	}
	if g := wl.Dataset.Generated; g != nil {
		w.Generated = &dataset.Spec{Count: int(g.Count), Queries: int(max(g.Queries, 1)), Dim: w.Dim, Seed: uint64(g.Seed)}
	} else if h := wl.Dataset.HDF5; h != nil {
		w.HDF5 = h.Path
	}
	return w, nil
}

// ErrTooLarge is a dataset too large for the runner's memory budget.
var ErrTooLarge = errors.New("dataset too large for the Local runner")

// LocalBytes is the most a Local run of the workload holds in the operator's memory: the
// base and query vectors (a float32 per component; an HDF5 file, its size), the queries'
// true neighbours, and the largest encoded copy the representation sweep makes of them —
// byte keeps a float32 per component (a second full-size copy), binary one per 8
// components; the others are encoded by OpenSearch. The sweep encodes one representation
// at a time, and loads one index at a time through one bulk buffer.
func (w Workload) LocalBytes(reps []v1alpha1.VectorRepresentation) (int64, error) {
	var vectors, neighbours int64
	dim := w.Dim
	if g := w.Generated; g != nil {
		dim = g.Dim
		vectors = int64(g.Count+g.Queries) * int64(g.Dim) * 4
		neighbours = int64(g.Queries) * int64(max(w.K, 1)) * 8
	} else {
		info, err := os.Stat(w.HDF5)
		if err != nil {
			return 0, fmt.Errorf("dataset %s: %w", w.HDF5, err)
		}
		vectors = info.Size() // holds the neighbours too
	}
	named, err := bench.RepresentationsNamed(representationNames(reps))
	if err != nil {
		return 0, err
	}
	var copied int64
	for _, r := range named {
		switch r.DataType {
		case "byte":
			copied = max(copied, vectors)
		case "binary":
			copied = max(copied, vectors/8+1)
		}
	}
	return vectors + neighbours + copied + bench.IngestBufferBytes(dim), nil
}

// FitsLocal says whether need bytes (LocalBytes) can ever fit the Local runners' budget.
func FitsLocal(need, budget int64) error {
	if need > budget {
		return fmt.Errorf("%w: its vectors and their copies take %s, the operator allows %s for all Local runs together (--local-benchmark-max-bytes); use the Argo runner, or fewer vectors", ErrTooLarge, MiB(need), MiB(budget))
	}
	return nil
}

// MiB says n bytes in MiB, to a tenth.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Data is a workload's vectors and the queries' true neighbours.
type Data struct {
	Base, Queries dataset.Vectors
	Exact         [][]dataset.Neighbor
}

// HDF5Reader reads an HDF5 dataset (the python with h5py and the export script).
type HDF5Reader struct{ Python, ExportScript string }

// Materialize builds the workload's data: generated and solved exactly, or read from the file.
func (w Workload) Materialize(r HDF5Reader) (Data, error) {
	if w.Generated != nil {
		base, queries := dataset.Generate(*w.Generated)
		return Data{Base: base, Queries: queries, Exact: dataset.ExactKNN(base, queries, w.K)}, nil
	}
	set, err := dataset.ReadHDF5(w.HDF5, r.Python, r.ExportScript)
	if err != nil {
		return Data{}, err
	}
	if set.Train.Dim != w.Dim {
		return Data{}, fmt.Errorf("%s has vectors of dimension %d, field %s has %d", w.HDF5, set.Train.Dim, w.Field, w.Dim)
	}
	return Data{Base: set.Train, Queries: set.Test, Exact: set.Exact(w.K)}, nil
}

// Load modes of a workload.
const (
	LoadIfIncomplete = "IfIncomplete"
	LoadIntoNonEmpty = "IntoNonEmpty"
	LoadNever        = "Never"
)

// DatasetMark is the index _meta key that records which benchmark dataset a run started
// loading into an empty index, so a load cut short is completed rather than refused.
const DatasetMark = "vectorpilot.io/benchmark-dataset"

// Fingerprint names the workload's dataset.
func (w Workload) Fingerprint() string {
	if w.Generated != nil {
		g := w.Generated
		return fmt.Sprintf("generated count=%d dim=%d seed=%d field=%s", g.Count, g.Dim, g.Seed, w.Field)
	}
	return "hdf5 " + w.HDF5 + " field=" + w.Field
}

// NotEmptyError is a load refused because the index holds documents that are not the
// workload's dataset.
type NotEmptyError struct {
	Index string
	Docs  int64
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("index %s holds %d documents that are not this run's dataset: a benchmark load could mix its vectors into them; "+
		"benchmark an empty VectorIndex, or set spec.workload.load to IntoNonEmpty (adds the dataset beside them) or Never (measures the index as it is)", e.Index, e.Docs)
}

// Prepare writes the base vectors when the workload loads and the index holds fewer
// documents than the dataset. An index holding other documents is written to only with
// load IntoNonEmpty; an empty one is first marked with the dataset's fingerprint, so a
// load cut short is completed (documents are created by id, never overwritten). It
// returns whether recall is meaningful: the index holds exactly the dataset (it was loaded
// into an empty index) and the field measures L2.
func Prepare(ctx context.Context, c *opensearch.Client, w Workload, d Data, progress func(done int)) (bool, error) {
	stats, err := c.Stats(ctx, w.Index)
	if err != nil {
		return false, err
	}
	idx, err := c.GetIndex(ctx, w.Index)
	if err != nil {
		return false, err
	}
	ours := idx.Meta[DatasetMark] == w.Fingerprint()
	if stats.DocsCount < int64(d.Base.Len()) && w.Load != LoadNever {
		switch {
		case stats.DocsCount > 0 && !ours && w.Load != LoadIntoNonEmpty:
			return false, &NotEmptyError{Index: w.Index, Docs: stats.DocsCount}
		case stats.DocsCount == 0 && !ours:
			ours = true
			if err := MarkDataset(ctx, c, idx, w.Fingerprint()); err != nil {
				return false, err
			}
		}
		if err := bench.LoadInSegments(ctx, c, w.Index, w.Field, d.Base, 4, 1000, progress); err != nil {
			return false, err
		}
		if stats, err = c.Stats(ctx, w.Index); err != nil {
			return false, err
		}
	}
	return w.L2 && ours && stats.DocsCount == int64(d.Base.Len()), nil
}

// MarkDataset records in the index's _meta (keeping what is there, the VectorIndex's
// ownership among it) that the index holds the dataset with this fingerprint.
func MarkDataset(ctx context.Context, c *opensearch.Client, idx *opensearch.Index, fingerprint string) error {
	meta := maps.Clone(idx.Meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[DatasetMark] = fingerprint
	return c.PutMeta(ctx, idx.Name, meta)
}

// HeldSettings are the index settings a run changes: the refresh interval while it loads,
// the slice settings cell by cell. The VectorIndex leaves them alone while the run is
// Running, and the run puts them back when it ends.
var HeldSettings = []string{bench.RefreshInterval, indexspec.SettingConcurrentMode, indexspec.SettingMaxSliceCount}

// SettingsBefore reads the held settings as they are now; "" stands for a setting that is
// not set.
func SettingsBefore(ctx context.Context, c *opensearch.Client, index string) (map[string]string, error) {
	idx, err := c.GetIndex(ctx, index)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range HeldSettings {
		out[k] = idx.Settings[k]
	}
	return out, nil
}

// RestoreBody is the settings body that puts saved settings back (null resets one that
// was not set).
func RestoreBody(saved map[string]string) map[string]any {
	body := map[string]any{}
	for k, v := range saved {
		if v == "" {
			body[k] = nil
		} else {
			body[k] = v
		}
	}
	return body
}

// SweepConfig is the engine's configuration for the workload.
func (w Workload) SweepConfig(d Data, sliceCounts, clients []int32) bench.SweepConfig {
	cfg := bench.SweepConfig{Index: w.Index, Field: w.Field, Queries: d.Queries, Exact: d.Exact, K: w.K, Warmup: w.Warmup, Duration: w.Duration, Variants: w.Variants}
	for _, s := range sliceCounts {
		cfg.SliceCounts = append(cfg.SliceCounts, indexspec.Slices(s))
	}
	for _, c := range clients {
		cfg.Clients = append(cfg.Clients, int(c))
	}
	return cfg
}

// Result is what a run reports into its status.
type Result struct {
	Engine          string
	Cores, Segments int
	Cells           []bench.Cell
	// RecallValid: the cells' recall is against the true neighbours of what the index holds.
	RecallValid bool
	// CPUValid: the cells' CPU was measured on the nodes. Without it the cells' CPU is
	// absent and the run recommends nothing: every tuner decision is against CPU headroom.
	CPUValid bool
	// Variants are the compared configurations as their nodes reported them.
	Variants []v1alpha1.BenchmarkVariantResult
	// KNNEngine is the measured field's engine: its distance code is what variants compare.
	KNNEngine string
	// Representations are the representation sweep's results.
	Representations []bench.RepresentationResult
}

// Apply writes the result into the run's status: the cells; for a run without variants
// the tuner's recommendation for each measured client level (with the VectorIndex
// defaults, 20% headroom and 1% gain per CPU point, unless params say otherwise); for a
// run with variants their comparison and the SIMD level they recommend; the
// representations and the cheapest meeting the run's recall target.
func (r Result) Apply(run *v1alpha1.BenchmarkRun, params autotune.Params) error {
	status := &run.Status
	status.Engine, status.Cores, status.Segments = r.Engine, int32(r.Cores), int32(r.Segments)
	status.Results, status.Recommendations, status.Variants, status.SIMDRecommendation = nil, nil, nil, nil
	var levels []int
	var table autotune.Table
	for _, m := range r.Cells {
		cell := v1alpha1.BenchmarkCell{Variant: m.Variant, SliceCount: int32(m.SliceCount), Clients: int32(m.Clients),
			P50Ms: num(m.P50Ms), P90Ms: num(m.P90Ms), P99Ms: num(m.P99Ms), QPS: num(m.QPS)}
		if r.CPUValid {
			cell.CPUPercent = num(m.CPUPercent)
		}
		if r.RecallValid {
			cell.Recall = strconv.FormatFloat(m.Recall, 'f', 4, 64)
		}
		if m.InFlight > 0 {
			cell.InFlight = num(m.InFlight)
		}
		status.Results = append(status.Results, cell)
		table.Results = append(table.Results, m.Measurement)
		if !slices.Contains(levels, m.Clients) {
			levels = append(levels, m.Clients)
		}
	}
	if len(r.Variants) > 0 {
		status.Variants = slices.Clone(r.Variants)
		status.SIMDRecommendation = CompareVariants(status.Variants, r.Cells, r.KNNEngine)
	} else if r.CPUValid {
		slices.Sort(levels)
		table.Cores, table.Segments = r.Cores, r.Segments
		for _, n := range levels {
			p := params
			p.Clients = float64(n)
			d, err := autotune.Decide(table, p)
			if err != nil {
				return fmt.Errorf("tuner on %d clients: %w", n, err)
			}
			status.Recommendations = append(status.Recommendations, v1alpha1.BenchmarkRecommendation{Clients: int32(n), SliceCount: int32(d.SliceCount), Reason: d.Reason})
		}
	}
	return r.applyRepresentations(run)
}

// DefaultParams are the tuner settings a run's recommendations use: those of a VectorIndex
// whose tuning block has its defaults.
var DefaultParams = autotune.Params{HeadroomPercent: 20, MinGainPerCPUPercent: 1}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// TunerInput says whether a run's results may be the slice tuner's table: it succeeded,
// it measured the index as it serves (a run with variants pins queries to some nodes: an
// A/B record of configurations, not of the cluster), and every cell has the node CPU the
// tuner weighs against the headroom (OpenSearch Benchmark's cells have none).
func TunerInput(run *v1alpha1.BenchmarkRun) bool {
	return run.Status.Phase == v1alpha1.BenchmarkSucceeded && run.Status.CompletionTime != nil && len(run.Spec.Variants) == 0 &&
		len(run.Status.Results) > 0 && !slices.ContainsFunc(run.Status.Results, func(c v1alpha1.BenchmarkCell) bool { return c.CPUPercent == "" })
}

// Table reads a succeeded run's status back as the tuner's input.
func Table(status v1alpha1.BenchmarkRunStatus) (autotune.Table, error) {
	t := autotune.Table{Cores: int(status.Cores), Segments: int(status.Segments)}
	for i, c := range status.Results {
		m := autotune.Measurement{SliceCount: indexspec.Slices(c.SliceCount), Clients: int(c.Clients)}
		for _, f := range []struct {
			text string
			into *float64
		}{{c.P50Ms, &m.P50Ms}, {c.P90Ms, &m.P90Ms}, {c.P99Ms, &m.P99Ms}, {c.QPS, &m.QPS}, {c.CPUPercent, &m.CPUPercent}, {c.Recall, &m.Recall}, {c.InFlight, &m.InFlight}} {
			if f.text == "" {
				continue
			}
			v, err := strconv.ParseFloat(f.text, 64)
			if err != nil {
				return t, fmt.Errorf("status.results[%d]: %w", i, err)
			}
			*f.into = v
		}
		t.Results = append(t.Results, m)
	}
	if len(t.Results) == 0 {
		return t, fmt.Errorf("the run has no results")
	}
	return t, nil
}
