package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// newBenchReplayCommand replays a day-shaped load over a benchmark table with the tuner's
// own code: no cluster, so the tuner's value can be shown on hardware we do not have.
func newBenchReplayCommand() *cobra.Command {
	var (
		tableFile, schedule, outDir   string
		headroom, minGain, hysteresis float64
		candidates                    []int
		sample, window, dwell         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay a load schedule over a benchmark table: the tuner, every static setting and the oracle, time-weighted p50/p90/p99",
		Long: `Replay simulates a day of load — a schedule of closed-loop clients × duration — over a
benchmark table (a sweep's results.json, or a published table in the same form): the table
is the simulation's truth, each setting's latency and CPU at a load interpolated as the tuner
predicts them. It runs the tuner's own decision code (autotune.Decide with the dwell),
reading each sample's load at its end as the operator does; every measured setting alone;
and the oracle, the setting with the lowest p90 within the CPU budget for each step in
hindsight. It prints per run the time-weighted p50/p90/p99, the windows over the budget, the
changes and the lag from each load step to the change, and writes replay.md and replay.svg
(p90 per window over the schedule's clients) to --out.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			table, err := readTable(tableFile)
			if err != nil {
				return err
			}
			steps, err := autotune.ParseSchedule(schedule)
			if err != nil {
				return err
			}
			params := autotune.Params{HeadroomPercent: headroom, MinGainPerCPUPercent: minGain, HysteresisPercent: hysteresis, Candidates: asSlices(candidates)}
			runs, err := autotune.Replay(autotune.ReplayConfig{Table: table, Params: params, Sample: sample, Window: window, MinDwell: dwell}, steps)
			if err != nil {
				return err
			}
			var report bytes.Buffer
			fmt.Fprintf(&report, "Replay of %s over %s (%d cores, %d segments): headroom %.0f%%, tuner sampling every %s, dwell %s.\n\n",
				schedule, tableFile, table.Cores, table.Segments, headroom, sample, dwell)
			if err := bench.WriteReplayMarkdown(&report, table, 100-headroom, runs); err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), report.String())
			if outDir == "" {
				return nil
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(outDir, "replay.md"), report.Bytes(), 0o644); err != nil {
				return err
			}
			var svg bytes.Buffer
			title := fmt.Sprintf("%s over %s", schedule, strings.TrimSuffix(filepath.Base(tableFile), filepath.Ext(tableFile)))
			if err := bench.WriteReplaySVG(&svg, title, steps, window, runs); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(outDir, "replay.svg"), svg.Bytes(), 0o644)
		},
	}
	f := cmd.Flags()
	f.StringVar(&tableFile, "table", "", "benchmark table: a sweep's results.json or a table in its form (required)")
	f.StringVar(&schedule, "schedule", "1x2m,4x2m,8x2m,4x2m,1x2m", "load schedule: clients x duration, comma-separated")
	f.Float64Var(&headroom, "headroom", 20, "CPU headroom (spec.tuning.cpuHeadroomPercent)")
	f.Float64Var(&minGain, "min-gain-per-cpu", 1, "least p90 cut (percent) per extra CPU point (spec.tuning.minGainPerCpuPercent)")
	f.Float64Var(&hysteresis, "hysteresis", 5, "spec.tuning.hysteresisPercent")
	f.IntSliceVar(&candidates, "candidates", nil, "slice settings the tuner may choose (spec.tuning.sliceCandidates; default every measured one)")
	f.DurationVar(&sample, "sample", 10*time.Second, "how often the tuner reads the load and decides")
	f.DurationVar(&window, "window", 10*time.Second, "report window (a whole number of samples)")
	f.DurationVar(&dwell, "min-dwell", 0, "spec.tuning.minDwell")
	f.StringVar(&outDir, "out", "", "folder for replay.md and replay.svg")
	_ = cmd.MarkFlagRequired("table")
	return cmd
}

// asSlices reads slice-setting flags (1 off, 0 Lucene's default slicing, N slices).
func asSlices(ints []int) []indexspec.Slices {
	out := make([]indexspec.Slices, 0, len(ints))
	for _, n := range ints {
		out = append(out, indexspec.Slices(n))
	}
	return out
}
