package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmark k-NN indexes"}
	cmd.AddCommand(newBenchLoadCommand(), newBenchSweepCommand(), newBenchRepresentationsCommand(), newBenchSIMDCompareCommand(), newBenchJVMOptionsCommand(), newBenchKNNSettingsCommand(), newBenchReplayCommand())
	cmd.AddCommand(newBenchStepCommands()...)
	return cmd
}

// newBenchLoadCommand loads a generated dataset into an existing index and measures recall
// and latency of k-NN queries against it.
func newBenchLoadCommand() *cobra.Command {
	var (
		url, index, field string
		spec              dataset.Spec
		k, batch          int
		ingest            bool
	)
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Ingest a seeded, clustered dataset into an index, then measure recall@k and latency against exact neighbours",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := opensearch.New(opensearch.Config{Endpoint: url})
			if err != nil {
				return err
			}
			base, queries := dataset.Generate(spec)
			out := cmd.OutOrStdout()
			if ingest {
				start := time.Now()
				lastTenth := 0
				err = bench.Ingest(ctx, c, index, field, base, batch, func(done int) {
					if tenth := done * 10 / base.Len(); tenth > lastTenth {
						lastTenth = tenth
						fmt.Fprintf(os.Stderr, "  ingesting %s: %d / %d vectors (%d%%)\n", index, done, base.Len(), tenth*10)
					}
				})
				if err != nil {
					return err
				}
				took := time.Since(start)
				if err := c.Refresh(ctx, index); err != nil {
					return err
				}
				fmt.Fprintf(out, "loaded %d vectors (dim %d) in %s (%.0f vectors/s)\n", base.Len(), base.Dim, took.Round(time.Millisecond), float64(base.Len())/took.Seconds())
				// A BenchmarkRun of the same dataset with load Never then knows the index holds
				// exactly it, and reports recall.
				idx, err := c.GetIndex(ctx, index)
				if err != nil {
					return err
				}
				if err := benchrun.MarkDataset(ctx, c, idx, benchrun.Workload{Field: field, Generated: &spec}.Fingerprint()); err != nil {
					return err
				}
			}
			exact := dataset.ExactKNN(base, queries, k)
			res, err := bench.MeasureQueries(ctx, c, index, field, queries, exact, k)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%d queries, one client: recall@%d %.4f, p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, %.0f qps\n",
				res.Queries, k, res.Recall, res.P50Ms, res.P90Ms, res.P99Ms, res.Throughput)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "http://127.0.0.1:9200", "OpenSearch endpoint")
	f.StringVar(&index, "index", "", "index to load (must exist with a knn_vector field)")
	f.StringVar(&field, "field", "embedding", "knn_vector field")
	datasetFlags(f, &spec, dataset.Spec{Count: 10000, Queries: 200, Dim: 64})
	f.IntVar(&k, "k", 10, "neighbours per query")
	f.IntVar(&batch, "batch", 500, "vectors per bulk request")
	f.BoolVar(&ingest, "ingest", true, "ingest the dataset first; false measures an index loaded earlier with the same dataset flags")
	_ = cmd.MarkFlagRequired("index")
	return cmd
}

// datasetFlags are the flags of a generated dataset, with their defaults: the same values
// give the same vectors, queries and ground truth in every bench command.
func datasetFlags(f *pflag.FlagSet, spec *dataset.Spec, defaults dataset.Spec) {
	f.IntVar(&spec.Count, "count", defaults.Count, "vectors in the dataset")
	f.IntVar(&spec.Queries, "queries", defaults.Queries, "distinct query vectors")
	f.IntVar(&spec.Dim, "dimension", defaults.Dim, "vector dimension (must match the field of an existing index)")
	f.Uint64Var(&spec.Seed, "seed", 1, "generator seed")
}
