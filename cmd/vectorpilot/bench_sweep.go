package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// sweepOptions are the flags of `vectorpilot bench sweep`.
type sweepOptions struct {
	url, index, field, outDir  string
	engine                     string
	hdf5, python, exportScript string
	create                     bool
	spec                       dataset.Spec
	segments, shards, k        int
	slices, clients            []int
	warmup, duration           time.Duration
	headroom, minGain          float64
}

func newBenchSweepCommand() *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Measure p50/p90/p99, throughput, recall and node CPU for slice settings × client counts",
		Long: `Sweep runs closed-loop clients against an index for every slice setting and client
level (1 = concurrent search off, 0 = Lucene's default slicing, N = at most N slices), one
cell at a time, and writes results.json (the tuner's input), results.csv and chart.svg to
--out. With --create it first creates the index (HNSW on --engine) and loads a generated
dataset in --segments segments, printing how long loading and building took; the same dataset flags regenerate the same queries and ground truth.`,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "http://127.0.0.1:9200", "OpenSearch endpoint")
	f.StringVar(&o.index, "index", "bench-vectors", "index to measure")
	f.StringVar(&o.field, "field", "embedding", "knn_vector field")
	f.BoolVar(&o.create, "create", false, "(re)create the index and load the dataset first")
	f.StringVar(&o.engine, "engine", "lucene", "the k-NN engine of the index --create makes: lucene or faiss")
	f.StringVar(&o.hdf5, "hdf5", "", "use an ann-benchmarks / OpenSearch Benchmark HDF5 file (train, test, neighbors) instead of generated vectors")
	f.StringVar(&o.python, "python", "bin/venv/bin/python", "python with h5py, for --hdf5 (hack/install-python.sh makes it)")
	f.StringVar(&o.exportScript, "hdf5-export-script", "hack/hdf5_export.py", "the script that exports an HDF5 file for --hdf5")
	datasetFlags(f, &o.spec, dataset.Spec{Count: 100000, Queries: 500, Dim: 64})
	f.IntVar(&o.segments, "segments", 8, "segments per shard to load into (with --create)")
	f.IntVar(&o.shards, "shards", 1, "primary shards (with --create)")
	f.IntVar(&o.k, "k", 10, "neighbours per query")
	f.IntSliceVar(&o.slices, "slices", []int{1, 2, 4, 0}, "slice settings")
	f.IntSliceVar(&o.clients, "clients", []int{1, 2, 4}, "closed-loop client counts")
	f.DurationVar(&o.warmup, "warmup", 5*time.Second, "warm-up per cell, not measured")
	f.DurationVar(&o.duration, "duration", 15*time.Second, "measured time per cell")
	f.StringVar(&o.outDir, "out", "bench-results", "folder for results.json, results.csv and chart.svg")
	f.Float64Var(&o.headroom, "headroom", 20, "CPU headroom for the tuner's summary")
	f.Float64Var(&o.minGain, "min-gain-per-cpu", 1, "least p90 cut (percent) per extra CPU point, for the tuner's summary")
	return cmd
}

func runSweep(cmd *cobra.Command, o *sweepOptions) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	c, err := opensearch.New(opensearch.Config{Endpoint: o.url, RequestTimeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	base, queries, exact, err := sweepDataset(out, o)
	if err != nil {
		return err
	}
	if o.create {
		if err := createBenchIndex(cmd, c, o, base); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, bench.TableHeader)
	rep, err := bench.Sweep(ctx, c, bench.SweepConfig{
		Index: o.index, Field: o.field, Queries: queries, Exact: exact, K: o.k,
		SliceCounts: asSlices(o.slices), Clients: o.clients, Warmup: o.warmup, Duration: o.duration,
		OnCell: func(cell bench.Cell) { fmt.Fprintln(out, bench.Row(cell)) },
	})
	if err != nil {
		return err
	}
	if err := writeSweepOutputs(o.outDir, rep); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d segments, %d cores; written %s/{results.json,results.csv,chart.svg}\n", rep.Segments, rep.Cores, o.outDir)
	printTunerVsOracle(cmd, rep, o)
	return nil
}

// sweepDataset is the base vectors, queries and their true neighbours: from an HDF5 file
// (its own ground truth), or generated with exact neighbours computed here.
func sweepDataset(out io.Writer, o *sweepOptions) (base, queries dataset.Vectors, exact [][]dataset.Neighbor, err error) {
	if o.hdf5 != "" {
		set, err := dataset.ReadHDF5(o.hdf5, o.python, o.exportScript)
		if err != nil {
			return base, queries, nil, err
		}
		n := min(o.spec.Queries, set.Test.Len())
		queries = dataset.Vectors{Dim: set.Test.Dim, Data: set.Test.Data[:n*set.Test.Dim]}
		o.spec.Dim = set.Train.Dim
		fmt.Fprintf(out, "dataset %s: %d vectors of dimension %d, %d of %d queries, ground truth from the file\n", o.hdf5, set.Train.Len(), set.Train.Dim, n, set.Test.Len())
		return set.Train, queries, set.Exact(o.k)[:n], nil
	}
	base, queries = dataset.Generate(o.spec)
	t0 := time.Now()
	exact = dataset.ExactKNN(base, queries, o.k)
	fmt.Fprintf(out, "ground truth: %d queries × %d vectors exact in %s (%.1fM pairs/s)\n", queries.Len(), base.Len(), time.Since(t0).Round(time.Millisecond),
		float64(queries.Len()*base.Len())/time.Since(t0).Seconds()/1e6)
	return base, queries, exact, nil
}

// createBenchIndex (re)creates the index from a VectorIndex spec, through the same
// translation the operator uses, and loads the dataset into the asked segment count.
func createBenchIndex(cmd *cobra.Command, c *opensearch.Client, o *sweepOptions, base dataset.Vectors) error {
	ctx := cmd.Context()
	spec := v1alpha1.VectorIndexSpec{
		Shards: int32(o.shards), Replicas: 0, RefreshInterval: "1s",
		Fields: []v1alpha1.VectorField{{Name: o.field, Dimension: int32(o.spec.Dim), DataType: "float", SpaceType: "l2", Engine: o.engine, Mode: "in_memory", CompressionLevel: "1x",
			Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16), EfConstruction: ptr.To[int32](128), EfSearch: ptr.To[int32](100)}}}},
		Search: v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
	}
	props, err := indexspec.Properties(&spec)
	if err != nil {
		return err
	}
	if err := c.DeleteIndex(ctx, o.index); err != nil {
		return err
	}
	if err := c.CreateIndex(ctx, o.index, indexspec.CreateSettings(&spec), props, nil); err != nil {
		return err
	}
	start, lastTenth := time.Now(), 0
	err = bench.LoadInSegments(ctx, c, o.index, o.field, base, o.segments, 1000, func(done int) {
		if tenth := done * 10 / base.Len(); tenth > lastTenth {
			lastTenth = tenth
			fmt.Fprintf(os.Stderr, "  loading %s: %d / %d vectors (%d%%)\n", o.index, done, base.Len(), tenth*10)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "loaded %d vectors (dim %d) in %s\n", base.Len(), base.Dim, time.Since(start).Round(time.Second))
	return nil
}

func writeSweepOutputs(dir string, rep bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	for name, write := range map[string]func(*os.File) error{
		"results.csv": func(f *os.File) error { return bench.WriteCSV(f, rep) },
		"chart.svg":   func(f *os.File) error { return bench.WriteSVG(f, rep) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// printTunerVsOracle shows, per client level, the tuner's choice next to the best setting
// in hindsight: the lowest measured p90 among cells within the CPU budget.
func printTunerVsOracle(cmd *cobra.Command, rep bench.Report, o *sweepOptions) {
	out := cmd.OutOrStdout()
	budget := 100 - o.headroom
	fmt.Fprintf(out, "\ntuner (headroom %.0f%%, min gain %.1f%%/CPU point) vs oracle (lowest measured p90 with CPU ≤ %.0f%%):\n", o.headroom, o.minGain, budget)
	for _, clients := range o.clients {
		d, err := autotune.Decide(rep.Table(), autotune.Params{HeadroomPercent: o.headroom, MinGainPerCPUPercent: o.minGain, Clients: float64(clients)})
		if err != nil {
			fmt.Fprintf(out, "  %d clients: %v\n", clients, err)
			continue
		}
		var oracle, chosen *bench.Cell
		for i, c := range rep.Results {
			if c.Clients != clients {
				continue
			}
			if c.SliceCount == d.SliceCount {
				chosen = &rep.Results[i]
			}
			if c.CPUPercent <= budget && (oracle == nil || c.P90Ms < oracle.P90Ms) {
				oracle = &rep.Results[i]
			}
		}
		if oracle == nil || chosen == nil {
			fmt.Fprintf(out, "  %d clients: tuner %s (%s); no cell fits the CPU budget\n", clients, d.SliceCount.Short(), d.Reason)
			continue
		}
		fmt.Fprintf(out, "  %d clients: tuner %-6s p90 %6.2f ms cpu %5.1f%% | oracle %-6s p90 %6.2f ms cpu %5.1f%% | tuned p90 = %.0f%% of oracle's\n    reason: %s\n",
			clients, d.SliceCount.Short(), chosen.P90Ms, chosen.CPUPercent, oracle.SliceCount.Short(), oracle.P90Ms, oracle.CPUPercent, chosen.P90Ms/oracle.P90Ms*100, d.Reason)
	}
}
