package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/osb"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// stepFlags are the workload flags every Argo step of a BenchmarkRun shares; the
// WorkflowTemplates pass the Workflow's parameters through them.
type stepFlags struct {
	url                 string
	w                   benchrun.Workload
	count, queries      int
	seed                uint64
	python, exportShell string
	variant             bench.Variant
}

func (s *stepFlags) register(f *pflag.FlagSet) {
	f.StringVar(&s.url, "url", "http://127.0.0.1:9200", "OpenSearch endpoint; credentials from OPENSEARCH_USERNAME and OPENSEARCH_PASSWORD, the CA bundle it is verified with from the *.crt files in OPENSEARCH_CA_DIR")
	f.StringVar(&s.w.Index, "index", "", "index to measure")
	f.StringVar(&s.w.Field, "field", "embedding", "knn_vector field")
	f.IntVar(&s.w.Dim, "dimension", 0, "vector dimension of the field")
	f.IntVar(&s.count, "count", 0, "generated dataset: base vectors (0 with --hdf5)")
	f.IntVar(&s.queries, "queries", 200, "generated dataset: query vectors")
	f.Uint64Var(&s.seed, "seed", 1, "generated dataset: seed")
	f.StringVar(&s.w.HDF5, "hdf5", "", "HDF5 dataset file instead of a generated one")
	f.StringVar(&s.python, "python", "bin/venv/bin/python", "python with h5py, for --hdf5")
	f.StringVar(&s.exportShell, "hdf5-export-script", "hack/hdf5_export.py", "the script that exports an HDF5 file")
	f.IntVar(&s.w.K, "k", 10, "neighbours per query")
	f.StringVar(&s.w.Load, "load", "IfIncomplete", "IfIncomplete or Never")
	f.DurationVar(&s.w.Warmup, "warmup", 5*time.Second, "warm-up per cell")
	f.DurationVar(&s.w.Duration, "duration", 15*time.Second, "measured time per cell")
}

func (s *stepFlags) client() (*opensearch.Client, error) {
	ca, err := caFromEnv()
	if err != nil {
		return nil, err
	}
	return opensearch.New(opensearch.Config{Endpoint: s.url, Username: os.Getenv("OPENSEARCH_USERNAME"), Password: os.Getenv("OPENSEARCH_PASSWORD"),
		CACert: ca, RequestTimeout: 2 * time.Minute})
}

// caFromEnv is the PEM CA bundle in the folder OPENSEARCH_CA_DIR names (every *.crt file
// in it, joined), the only roots trusted for the cluster; none (the system's roots) when
// the variable is unset or the folder holds none — the Workflow mounts the CA from an
// optional Secret or ConfigMap, each under its own name.
func caFromEnv() ([]byte, error) {
	dir := os.Getenv("OPENSEARCH_CA_DIR")
	if dir == "" {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return nil, err
	}
	var bundle []byte
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		bundle = append(bundle, pem...)
	}
	return bundle, nil
}

func (s *stepFlags) data() (benchrun.Data, error) {
	w := s.w
	if w.HDF5 == "" {
		w.Generated = &dataset.Spec{Count: s.count, Queries: s.queries, Dim: w.Dim, Seed: s.seed}
	}
	return w.Materialize(benchrun.HDF5Reader{Python: s.python, ExportScript: s.exportShell})
}

func newBenchStepCommands() []*cobra.Command {
	var s stepFlags
	var slices, clients int
	var out string
	prepare := &cobra.Command{
		Use:   "prepare",
		Short: "Workflow step: write the dataset into the index unless it holds it already, then warm its nodes up",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, d, err := s.open()
			if err != nil {
				return err
			}
			recall, err := benchrun.Prepare(cmd.Context(), c, s.w, d, nil)
			if err != nil {
				return err
			}
			// The cells run in their own pods after this one: warm the nodes once here.
			if err := bench.WarmNodes(cmd.Context(), c, s.sweepConfig(d), 1); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "index %s ready and its nodes warm; recall meaningful: %v\n", s.w.Index, recall)
			return nil
		},
	}
	setSlices := &cobra.Command{
		Use:   "set-slices",
		Short: "Workflow step: apply a slice setting (1 off, 0 Lucene's, N slices) to the index",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := s.client()
			if err != nil {
				return err
			}
			return bench.SetSlices(cmd.Context(), c, s.w.Index, indexspec.Slices(slices))
		},
	}
	warmup := &cobra.Command{
		Use:   "warmup",
		Short: "Workflow step: run the cell's clients for --warmup, unmeasured",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, d, err := s.open()
			if err != nil {
				return err
			}
			return bench.Warmup(cmd.Context(), c, s.sweepConfig(d), clients)
		},
	}
	measure := &cobra.Command{
		Use:   "measure",
		Short: "Workflow step: measure one cell (latency, throughput, recall, node CPU) and write it as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, d, err := s.open()
			if err != nil {
				return err
			}
			recall := s.w.Load != "Never"
			step := benchrun.StepCell{KNNEngine: s.w.Engine}
			if s.variant.Nodes != "" {
				observed, err := benchrun.ObserveVariant(cmd.Context(), c, s.w.Index, s.variant)
				if err != nil {
					return err
				}
				step.VariantNodes = &observed
			}
			cell, cores, err := bench.Measure(cmd.Context(), c, s.sweepConfig(d), indexspec.Slices(slices), clients)
			if err != nil {
				return err
			}
			stats, err := c.Stats(cmd.Context(), s.w.Index)
			if err != nil {
				return err
			}
			step.Cell, step.Cores, step.Segments, step.RecallValid = cell, cores, int(stats.Segments), recall && stats.DocsCount == int64(d.Base.Len())
			step.CPUValid = true
			return writeJSON(out, step)
		},
	}
	for _, c := range []*cobra.Command{prepare, setSlices, warmup, measure} {
		s.register(c.Flags())
	}
	for _, c := range []*cobra.Command{setSlices, measure} {
		c.Flags().IntVar(&slices, "slices", 1, "slice setting")
	}
	for _, c := range []*cobra.Command{warmup, measure} {
		c.Flags().IntVar(&clients, "clients", 1, "closed-loop clients")
		c.Flags().StringVar(&s.variant.Name, "variant", "", "name of the variant the cell measures")
		c.Flags().StringVar(&s.variant.Nodes, "variant-nodes", "", "node specification the variant's queries are pinned to (empty: every node)")
	}
	measure.Flags().StringVar(&out, "out", "/tmp/cell.json", "where to write the cell")
	return []*cobra.Command{prepare, setSlices, warmup, measure, newBenchRepresentationsStepCommand(), newBenchReportCommand(), newBenchExportBigANNCommand(), newBenchOSBCellCommand(), newBenchChartCommand()}
}

// sweepConfig is the engine's configuration of one cell step, on the step's variant.
func (s *stepFlags) sweepConfig(d benchrun.Data) bench.SweepConfig {
	cfg := s.w.SweepConfig(d, nil, nil)
	cfg.Variant = s.variant
	return cfg
}

// newBenchRepresentationsStepCommand measures the run's representations in scratch
// indexes marked with the run's owner and drops them after, writing the results as JSON
// (an empty list when the run names none).
func newBenchRepresentationsStepCommand() *cobra.Command {
	var s stepFlags
	var names, owner, out string
	cmd := &cobra.Command{
		Use:   "representations-step",
		Short: "Workflow step: measure the run's vector representations in scratch indexes and write the results as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var reps []v1alpha1.VectorRepresentation
			for _, n := range strings.Split(names, ",") {
				if n != "" {
					reps = append(reps, v1alpha1.VectorRepresentation(n))
				}
			}
			results := []bench.RepresentationResult{}
			if len(reps) > 0 {
				if owner == "" {
					return fmt.Errorf("--scratch-owner is required with --representations")
				}
				c, d, err := s.open()
				if err != nil {
					return err
				}
				measured, err := benchrun.MeasureRepresentations(cmd.Context(), c, s.w, d, reps, owner)
				if dropErr := benchrun.DropScratchOf(cmd.Context(), c, reps, s.w.Index, owner); err == nil {
					err = dropErr
				}
				if err != nil {
					return err
				}
				results = measured
			}
			return writeJSON(out, results)
		},
	}
	s.register(cmd.Flags())
	cmd.Flags().StringVar(&names, "representations", "", "comma-separated representations (float, byte, binary, sq7, sq1, faiss-float, faiss-fp16, faiss-binary)")
	cmd.Flags().IntVar(&s.w.Shards, "shards", 1, "shards of each scratch index")
	cmd.Flags().StringVar(&owner, "scratch-owner", "", "the mark the scratch indexes carry: only indexes with it are replaced or dropped")
	cmd.Flags().StringVar(&out, "out", "/tmp/representations.json", "where to write the results")
	return cmd
}

func (s *stepFlags) open() (*opensearch.Client, benchrun.Data, error) {
	c, err := s.client()
	if err != nil {
		return nil, benchrun.Data{}, err
	}
	d, err := s.data()
	return c, d, err
}

func writeJSON(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// newBenchReportCommand posts a Workflow's cells into its BenchmarkRun's status: results
// return through the API, never by scraping logs.
func newBenchReportCommand() *cobra.Command {
	var namespace, name, cells, engine, representations string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Workflow step: write the measured cells into the BenchmarkRun's status",
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := benchrun.ParseCells(cells, engine)
			if err != nil {
				return err
			}
			if representations != "" {
				if err := json.Unmarshal([]byte(representations), &res.Representations); err != nil {
					return fmt.Errorf("--representations: %w", err)
				}
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			k8s, err := client.New(cfg, client.Options{Scheme: controllers.Scheme()})
			if err != nil {
				return err
			}
			if err := benchrun.Post(cmd.Context(), k8s, types.NamespacedName{Namespace: namespace, Name: name}, res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reported %d cells to BenchmarkRun %s/%s\n", len(res.Cells), namespace, name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&namespace, "run-namespace", "", "namespace of the BenchmarkRun")
	f.StringVar(&name, "run-name", "", "name of the BenchmarkRun")
	f.StringVar(&cells, "cells", "", "the cell steps' outputs: a JSON array of cells (or of their JSON texts)")
	f.StringVar(&engine, "engine", "vectorpilot", "what measured the cells: vectorpilot or opensearch-benchmark")
	f.StringVar(&representations, "representations", "", "the representations step's output: a JSON array of results")
	return cmd
}

// newBenchExportBigANNCommand writes the workload's queries and true neighbours as Big ANN
// files for OpenSearch Benchmark.
func newBenchExportBigANNCommand() *cobra.Command {
	var s stepFlags
	var out string
	cmd := &cobra.Command{
		Use:   "export-bigann",
		Short: "Workflow step: write the queries and their true neighbours as Big ANN files (queries.fbin, neighbors.bin) for OpenSearch Benchmark",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.variant.Nodes != "" {
				return fmt.Errorf("OpenSearch Benchmark cannot pin its queries to a variant's nodes (%s): measure variants with the vectorpilot-benchmark-sweep template", s.variant.Nodes)
			}
			d, err := s.data()
			if err != nil {
				return err
			}
			q, n, err := osb.WriteBigANN(out, d.Queries, d.Exact)
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s\n", q, n)
			return err
		},
	}
	s.register(cmd.Flags())
	cmd.Flags().StringVar(&s.variant.Nodes, "variant-nodes", "", "the cell's variant nodes: refused, OSB cannot pin queries to nodes")
	cmd.Flags().StringVar(&out, "out", ".", "folder to write to")
	return cmd
}

// newBenchOSBCellCommand turns an OpenSearch Benchmark test_run.json into a cell.
func newBenchOSBCellCommand() *cobra.Command {
	var testRun, out string
	var slices, clients int
	cmd := &cobra.Command{
		Use:   "osb-cell",
		Short: "Workflow step: read an OpenSearch Benchmark test_run.json into a cell",
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := os.ReadFile(testRun)
			if err != nil {
				return err
			}
			m, err := osb.Parse(raw)
			if err != nil {
				return err
			}
			m.SliceCount, m.Clients = indexspec.Slices(slices), clients
			return writeJSON(out, benchrun.StepCell{Cell: bench.Cell{Measurement: m}, RecallValid: m.Recall > 0})
		},
	}
	f := cmd.Flags()
	f.StringVar(&testRun, "test-run", "test_run.json", "OpenSearch Benchmark's test_run.json")
	f.IntVar(&slices, "slices", 1, "the slice setting the run measured")
	f.IntVar(&clients, "clients", 1, "the run's search clients")
	f.StringVar(&out, "out", "cell.json", "where to write the cell")
	return cmd
}

// newBenchChartCommand writes a BenchmarkRun's results as the sweep's files (results.json,
// results.csv, chart.svg) and prints its table and recommendations.
func newBenchChartCommand() *cobra.Command {
	var outDir string
	kube := newKubeFlags()
	cmd := &cobra.Command{
		Use:   "chart RUN",
		Short: "Write a BenchmarkRun's table as results.json, results.csv and chart.svg, and print it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, namespace, err := kube.config()
			if err != nil {
				return err
			}
			k8s, err := client.New(cfg, client.Options{Scheme: controllers.Scheme()})
			if err != nil {
				return err
			}
			var run v1alpha1.BenchmarkRun
			if err := k8s.Get(cmd.Context(), types.NamespacedName{Namespace: namespace, Name: args[0]}, &run); err != nil {
				return err
			}
			table, err := benchrun.Table(run.Status)
			if err != nil {
				return fmt.Errorf("BenchmarkRun %s (%s): %w", run.Name, run.Status.Phase, err)
			}
			rep := bench.Report{Index: run.Spec.IndexRef.Name, Cores: table.Cores, Segments: table.Segments}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, bench.TableHeader)
			for _, m := range table.Results {
				cell := bench.Cell{Measurement: m}
				rep.Results = append(rep.Results, cell)
				fmt.Fprintln(out, bench.Row(cell))
			}
			for _, r := range run.Status.Recommendations {
				fmt.Fprintf(out, "  at %d client(s): %s (%s)\n", r.Clients, indexspec.Slices(r.SliceCount).Short(), r.Reason)
			}
			return writeSweepOutputs(outDir, rep)
		},
	}
	kube.register(cmd.Flags())
	cmd.Flags().StringVar(&outDir, "out", "bench-results", "folder for results.json, results.csv and chart.svg")
	return cmd
}

// kubeFlags give a command kubectl's meaning of --kubeconfig, --context and -n (the
// context's namespace by default), through client-go's clientcmd as kubectl does:
// cli-runtime's genericclioptions would add 2 MB and ten modules to the operator's binary
// for the same three flags.
type kubeFlags struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
}

func newKubeFlags() *kubeFlags {
	return &kubeFlags{rules: clientcmd.NewDefaultClientConfigLoadingRules()}
}

func (k *kubeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&k.rules.ExplicitPath, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&k.overrides.CurrentContext, "context", "", "the kubeconfig context to use")
	f.StringVarP(&k.overrides.Context.Namespace, "namespace", "n", "", "the namespace (default: the context's)")
}

// config is the API server's client configuration and the namespace to work in.
func (k *kubeFlags) config() (*rest.Config, string, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(k.rules, &k.overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	namespace, _, err := loader.Namespace()
	return cfg, namespace, err
}
