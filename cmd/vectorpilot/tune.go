package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// newTuneCommand prints the autotuner's choice for a benchmark table as JSON.
func newTuneCommand() *cobra.Command {
	var (
		input      string
		params     autotune.Params
		current    int
		candidates []int
	)
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Choose a slice count from a benchmark table (vectorpilot bench sweep output)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			table, err := readTable(input)
			if err != nil {
				return err
			}
			params.Candidates = asSlices(candidates)
			if cmd.Flags().Changed("current") {
				setting := indexspec.Slices(current)
				params.Current = &setting
			}
			d, err := autotune.Decide(table, params)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(d)
		},
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "benchmark table (JSON)")
	f.Float64Var(&params.HeadroomPercent, "headroom", 20, "percent of CPU to keep free")
	f.Float64Var(&params.Clients, "clients", 1, "load level to tune for, in benchmark clients (fractions interpolate)")
	f.Float64Var(&params.MinGainPerCPUPercent, "min-gain-per-cpu", 1, "least p90 cut, in percent, one extra CPU point must buy")
	f.Float64Var(&params.HysteresisPercent, "hysteresis", 5, "keep --current while the best predicts a p90 at most this much lower")
	f.IntSliceVar(&candidates, "candidates", nil, "slice settings to consider (1 off, 0 Lucene's default, N slices); default all measured")
	f.IntVar(&current, "current", 0, "slice setting applied now, for hysteresis")
	_ = cmd.MarkFlagRequired("input")
	return cmd
}

// readTable reads a benchmark table: a sweep's results.json, or a table in its form.
func readTable(path string) (autotune.Table, error) {
	var table autotune.Table
	raw, err := os.ReadFile(path)
	if err != nil {
		return table, err
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		return table, fmt.Errorf("%s: %w", path, err)
	}
	return table, nil
}
