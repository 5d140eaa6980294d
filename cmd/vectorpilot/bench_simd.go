package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// newBenchRepresentationsCommand measures float, sq, byte and binary indexes of the same
// vectors on one cluster, and recommends the cheapest that meets each recall target.
func newBenchRepresentationsCommand() *cobra.Command {
	var (
		url, prefix, field, variant, vectorization, outFile string
		spec                                                dataset.Spec
		k, shards                                           int
		clients                                             []int
		names                                               []string
		targets                                             []float64
		load                                                bool
		warmup, duration, exactDuration                     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "representations",
		Short: "Measure float, scalar-quantized (7 and 1 bit), byte and binary HNSW indexes of the same vectors: recall@k against exact float neighbours, p90, throughput, CPU and memory per document",
		Long: `Representations loads (with --load) one index per representation (float, sq7, sq1, byte, binary on Lucene;
faiss-float, faiss-fp16, faiss-binary on faiss, with --representations), <prefix>-<name>, from
the same generated float vectors (bytes scaled to the largest magnitude, bits by sign), one
segment per shard, then measures each: HNSW cells per client level with recall against the
exact float neighbours, a brute-force cell (the k-NN scoring script), and the vector files'
bytes per document. It prints the cheapest representation meeting each --targets recall.
Without --load it measures the indexes as they are: restart the node with other JVM vector
options in between and --variant names each run (see hack/bench-simd.sh).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			c, err := opensearch.New(opensearch.Config{Endpoint: url, RequestTimeout: 5 * time.Minute})
			if err != nil {
				return err
			}
			reps, err := bench.RepresentationsNamed(names)
			if err != nil {
				return fmt.Errorf("--representations: %w", err)
			}
			base, queries := dataset.Generate(spec)
			exact := dataset.ExactKNN(base, queries, k)
			nodes, err := c.NodeVariants(ctx, "")
			if err != nil {
				return err
			}
			res := bench.VariantResult{Variant: variant, Vectorization: vectorization}
			if len(nodes) > 0 {
				res.JVMArguments = nodes[0].JVMArguments
			}
			fmt.Fprintf(out, "variant %q (%s): %d vectors of dimension %d, %d queries, k %d\n", variant, vectorization, base.Len(), base.Dim, queries.Len(), k)
			res.Results, err = bench.MeasureRepresentations(ctx, c, bench.RepresentationConfig{
				Prefix: prefix, Field: field, Base: base, Queries: queries, Exact: exact, K: k, Shards: shards,
				Clients: clients, Representations: reps, Load: load,
				Warmup: warmup, Duration: duration, ExactDuration: exactDuration,
				Progress: func(format string, args ...any) { fmt.Fprintf(out, "  "+format+"\n", args...) },
			})
			if err != nil {
				return err
			}
			for _, t := range targets {
				if choice, ok := bench.RecommendRepresentation(res.Results, t); ok {
					met := "meets it"
					if !choice.Met {
						met = "none meets it; the most accurate"
					}
					fmt.Fprintf(out, "recall target %.2f: %s (%s; recall %.4f, %.0f hot bytes/doc, p90 %.2f ms)\n",
						t, choice.Name, met, choice.Recall, choice.HotBytesPerDoc, choice.P90Ms)
				}
			}
			if outFile == "" {
				return nil
			}
			raw, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				return err
			}
			return os.WriteFile(outFile, append(raw, '\n'), 0o644)
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "http://127.0.0.1:9200", "OpenSearch endpoint")
	f.StringVar(&prefix, "prefix", "bench-rep", "index name prefix")
	f.StringVar(&field, "field", "embedding", "knn_vector field")
	f.BoolVar(&load, "load", false, "(re)create and load the indexes first")
	f.StringSliceVar(&names, "representations", []string{"float", "sq7", "byte", "binary"}, "representations to measure (sq1 needs the k-NN plugin's native SIMD library: a node without it exits on the first search)")
	datasetFlags(f, &spec, dataset.Spec{Count: 100000, Queries: 500, Dim: 128})
	f.IntVar(&k, "k", 10, "neighbours per query")
	f.IntVar(&shards, "shards", 1, "primary shards (with --load)")
	f.IntSliceVar(&clients, "clients", []int{1, 2}, "closed-loop client counts of the HNSW cells")
	f.DurationVar(&warmup, "warmup", 5*time.Second, "warm-up per cell, not measured")
	f.DurationVar(&duration, "duration", 15*time.Second, "measured time per HNSW cell")
	f.DurationVar(&exactDuration, "exact-duration", 15*time.Second, "measured time of the brute-force cell (0 skips it)")
	f.Float64SliceVar(&targets, "targets", []float64{0.90, 0.95, 0.99}, "recall targets to recommend a representation for")
	f.StringVar(&variant, "variant", "", "name of the JVM configuration measured (e.g. avx512, avx2, scalar)")
	f.StringVar(&vectorization, "vectorization", "", "what the node reported of its vector code (hack/opensearch.sh's simd=)")
	f.StringVar(&outFile, "out", "", "write the results as JSON here")
	return cmd
}

// newBenchSIMDCompareCommand puts representation runs of several JVM configurations side
// by side: ratios against a baseline and the level a pool should ask for.
func newBenchSIMDCompareCommand() *cobra.Command {
	var (
		baseline, wide, narrow string
		minGain                float64
	)
	cmd := &cobra.Command{
		Use:   "simd-compare RESULT.json...",
		Short: "Compare representation runs of different JVM SIMD configurations: throughput and p90 ratios, and the SIMD level to ask for",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, files []string) error {
			out := cmd.OutOrStdout()
			var variants []bench.VariantResult
			for _, f := range files {
				raw, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				var v bench.VariantResult
				if err := json.Unmarshal(raw, &v); err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				variants = append(variants, v)
			}
			for _, v := range variants {
				fmt.Fprintf(out, "%-8s %s\n", v.Variant, v.Vectorization)
			}
			fmt.Fprintf(out, "\n%-8s %-7s %-8s %-9s %8s %8s %8s\n", "repr", "cell", "variant", "baseline", "qps×", "p90÷", "Δrecall")
			for _, b := range append([]string{baseline}, narrow) {
				for _, r := range bench.Ratios(variants, b) {
					if b == narrow && r.Variant != wide {
						continue
					}
					fmt.Fprintf(out, "%-8s %-7s %-8s %-9s %8.2f %8.2f %8.4f\n", r.Representation, r.Cell, r.Variant, r.Baseline, r.QPS, r.P90Speedup, r.RecallDelta)
				}
			}
			fmt.Fprintln(out)
			seen := map[string]bool{}
			for _, v := range variants {
				for _, r := range v.Results {
					if seen[r.Name] {
						continue
					}
					seen[r.Name] = true
					for _, cell := range []string{"hnsw/2", "exact"} {
						if choice, ok := bench.RecommendSIMD(variants, wide, narrow, r.Name, cell, minGain); ok {
							fmt.Fprintf(out, "%s %s: ask for %s — %s\n", r.Name, cell, choice.Level, choice.Reason)
						}
					}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&baseline, "baseline", "scalar", "variant the ratios are against")
	f.StringVar(&wide, "wide", "avx512", "the 512-bit variant")
	f.StringVar(&narrow, "narrow", "avx2", "the 256-bit variant")
	f.Float64Var(&minGain, "min-gain", 0.05, "least throughput gain (0.05 = 5 %) for which the wider level is worth fewer instance families")
	return cmd
}

// newBenchKNNSettingsCommand prints the k-NN node settings (opensearch.yml lines) that make
// a node load one faiss library variant, as a pool of that SIMD level's nodes do; "generic"
// disables every SIMD variant (hack/bench-faiss-simd.sh).
func newBenchKNNSettingsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "knn-settings LEVEL",
		Short: "Print the knn.faiss.*.disabled settings of a pool's SIMD level (avx2, avx512, avx512_spr), or of the generic library",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			settings := simd.KNNSettings(v1alpha1.SIMDLevel(args[0]))
			switch _, known := simd.For(v1alpha1.SIMDLevel(args[0])); {
			case args[0] == simd.Generic:
				for k := range settings {
					settings[k] = "true"
				}
			case !known:
				return fmt.Errorf("unknown SIMD level %q", args[0])
			}
			keys := slices.Sorted(maps.Keys(settings))
			for _, k := range keys {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", k, settings[k])
			}
			return nil
		},
	}
}

// newBenchJVMOptionsCommand prints the JVM vector options a pool of a SIMD level runs
// with, so a local node can be started as that pool's nodes are (hack/bench-simd.sh);
// "scalar" is none, Lucene's vector code without Panama.
func newBenchJVMOptionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "jvm-options LEVEL",
		Short: "Print the JVM vector options of a pool's SIMD level (avx2, avx512, avx512_spr, neon), or none for scalar",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "scalar" {
				return nil
			}
			level := v1alpha1.SIMDLevel(args[0])
			if _, ok := simd.For(level); !ok {
				return fmt.Errorf("unknown SIMD level %q", args[0])
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.Join(simd.JVMOptions(level), " "))
			return nil
		},
	}
}
