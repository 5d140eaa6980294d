package controllers_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// dayWindow is a report window of the live day, and the operator's resync: the tuner reads
// the load and decides once per window.
const dayWindow = 10 * time.Second

// daySettings are the static settings the day is run with, besides the tuner: the table's.
var daySettings = []indexspec.Slices{indexspec.SlicesOff, 2, 4, indexspec.SlicesLucene}

// TestTunerOverALiveDay is the tuner's benchmark on the live node (`make bench-tuner-day`;
// skipped unless TUNER_DAY_SCHEDULE is set, as "1x60s,4x60s,8x60s,4x60s,1x60s"): a
// VectorIndex in tuning Auto is measured by a Local BenchmarkRun (slice settings × 1, 2,
// 4, 8 clients) as a user's would be; then the schedule's closed-loop clients are
// replayed against it with the operator tuning, and again with each setting held (tuning
// Off, the setting in the spec). Per 10 s window: the clients' p50/p90/p99, the node's
// CPU, the setting in force and the tuner's reading of the load in clients. It writes
// day.md (each run, the oracle — the best static setting per step in hindsight — and the
// load readings against the true clients), day.svg and windows.json to TUNER_DAY_OUT
// (default bin/bench/tuner-day). TUNER_DAY_ROUNDS runs it all that many times, the order of
// the runs turned around each round, each round with its own oracle. Run it on an
// otherwise idle machine: the CPU windows are the node's.
func TestTunerOverALiveDay(t *testing.T) {
	scheduleSpec := os.Getenv("TUNER_DAY_SCHEDULE")
	if scheduleSpec == "" {
		t.Skip("a benchmark: TUNER_DAY_SCHEDULE=1x60s,4x60s,8x60s,4x60s,1x60s make bench-tuner-day")
	}
	schedule, err := autotune.ParseSchedule(scheduleSpec)
	if err != nil {
		t.Fatal(err)
	}
	vectors, dim, rounds := envInt(t, "TUNER_DAY_VECTORS", 100000), envInt(t, "TUNER_DAY_DIM", 64), envInt(t, "TUNER_DAY_ROUNDS", 1)
	minDwell, err := time.ParseDuration(cmp.Or(os.Getenv("TUNER_DAY_MIN_DWELL"), "0s"))
	if err != nil {
		t.Fatal(err)
	}
	out := cmp.Or(os.Getenv("TUNER_DAY_OUT"), filepath.Join(testsupport.Root(t), "bin", "bench", "tuner-day"))
	const headroom = 20

	opts := fastOptions
	opts.IndexResyncInterval = dayWindow
	e := startOperatorWith(t, opts)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "day")
	vi.Spec.Shards, vi.Spec.Fields[0].Dimension, vi.Spec.Fields[0].SpaceType = 1, int32(dim), "l2"
	tuning := v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: headroom, MinGainPerCPUPercent: "1", HysteresisPercent: 5,
		MinDwell: &metav1.Duration{Duration: minDwell}}
	vi.Spec.Tuning = tuning.DeepCopy()
	e.create(vi)
	e.waitIndexReady(vi)

	// The table, as a user makes it: a Local BenchmarkRun loads the index and sweeps it.
	const seed, queryCount = 7, 200
	sweep := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: "day-sweep", Namespace: e.ns}, Spec: v1alpha1.BenchmarkRunSpec{
		IndexRef: v1alpha1.LocalObjectReference{Name: vi.Name},
		Workload: v1alpha1.BenchmarkWorkload{
			Dataset: v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: int32(vectors), Queries: queryCount, Seed: seed}},
			Warmup:  metav1.Duration{Duration: 2 * time.Second}, Duration: metav1.Duration{Duration: 8 * time.Second},
		},
		SliceCounts: []int32{1, 2, 4, 0},
		Clients:     []int32{1, 2, 4, 8},
	}}
	e.create(sweep)
	started := time.Now()
	e.waitRunPhase(sweep, v1alpha1.BenchmarkSucceeded, 45*time.Minute)
	t.Logf("the sweep (%d vectors × %d, %d cells) took %s", vectors, dim, len(sweep.Status.Results), time.Since(started).Round(time.Second))
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionTrue, v1alpha1.ReasonTuned, time.Minute)

	// The clients ask the run's own queries (the same generated dataset); recall is not what
	// the day measures, so no exact neighbours are computed.
	_, queries := dataset.Generate(dataset.Spec{Count: vectors, Queries: queryCount, Dim: dim, Seed: seed})
	load := bench.SweepConfig{Index: vi.Spec.IndexName, Field: "embedding", Queries: queries, Exact: make([][]dataset.Neighbor, queries.Len()), K: 10, Duration: dayWindow}

	type reading struct {
		Clients float64 `json:"clients"`
		ReadAs  string  `json:"readAs"`
	}
	type round struct {
		Order    []string             `json:"order"`
		Records  []autotune.DayRecord `json:"records"`
		Readings []reading            `json:"readings"`
		runs     []autotune.ReplayRun
	}
	// The runs, as the report lists them: -1 is the operator tuning, then each setting held.
	dayRuns := append([]indexspec.Slices{-1}, daySettings...)
	// runDay runs the day once per setting in order.
	runDay := func(order []indexspec.Slices) round {
		var rd round
		byRun := map[indexspec.Slices]autotune.DayRecord{}
		for _, run := range order {
			name := "auto"
			if run >= 0 {
				name = "static " + run.String()
			}
			e.update(vi, func() {
				vi.Spec.Tuning = tuning.DeepCopy()
				if run >= 0 {
					vi.Spec.Tuning.Mode = v1alpha1.TuningOff
					vi.Spec.Search.ConcurrentSegmentSearch = specSlices(run)
				}
			})
			// The run starts idle, with its setting in force (the tuner's idle choice for auto).
			e.eventually(2*time.Minute, func() (bool, string) {
				_ = e.k8s.Get(e.ctx, clientKey(vi), vi)
				live := indexspec.SlicesOf(liveIndex(t, osClient, vi.Spec.IndexName).Settings)
				want := run
				if run < 0 {
					if vi.Status.Tuning == nil || vi.Status.Tuning.SampledAt == nil {
						return false, "no tuning status yet"
					}
					want = indexspec.Slices(vi.Status.Tuning.SliceCount)
				}
				return live == want, fmt.Sprintf("%s: index at %s, want %s", name, live, want)
			})
			time.Sleep(dayWindow)
			record := autotune.DayRecord{Name: name}
			for _, step := range schedule {
				for range int(step.Duration / dayWindow) {
					cell, _, err := bench.Measure(e.ctx, osClient, load, run, int(step.Clients))
					if err != nil {
						t.Fatalf("%s, %v clients: %v", name, step.Clients, err)
					}
					setting := indexspec.SlicesOf(liveIndex(t, osClient, vi.Spec.IndexName).Settings)
					record.Windows = append(record.Windows, autotune.Window{Setting: setting, P50Ms: cell.P50Ms, P90Ms: cell.P90Ms, P99Ms: cell.P99Ms, CPUPercent: cell.CPUPercent})
					if run < 0 {
						_ = e.k8s.Get(e.ctx, clientKey(vi), vi)
						if ts := vi.Status.Tuning; ts != nil && ts.LoadClients != "" {
							rd.Readings = append(rd.Readings, reading{Clients: step.Clients, ReadAs: ts.LoadClients})
						}
					}
				}
			}
			rd.Order, byRun[run] = append(rd.Order, name), record
			t.Logf("%s: %d windows", name, len(record.Windows))
		}
		for _, run := range dayRuns {
			rd.Records = append(rd.Records, byRun[run])
		}
		var err error
		if rd.runs, err = autotune.SummarizeDay(schedule, dayWindow, 100-headroom, rd.Records); err != nil {
			t.Fatal(err)
		}
		return rd
	}
	// Round after round the order turns around (auto first, then last, ...), so a machine
	// getting slower or faster over the hour weighs on every run alike.
	var days []round
	for r := range rounds {
		order := slices.Clone(dayRuns)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		days = append(days, runDay(order))
	}

	var report bytes.Buffer
	fmt.Fprintf(&report, "Live day %s on %s: %d × %d-d lucene HNSW, 1 shard; the table from a Local BenchmarkRun (%d cells); headroom %d%%, the operator resyncing every %s, minDwell %s, hysteresis 5%%; p50/p90/p99 per %s window, time-weighted; CPU is the node's.\n",
		scheduleSpec, url, vectors, dim, len(sweep.Status.Results), headroom, dayWindow, minDwell, dayWindow)
	table, err := benchrun.Table(sweep.Status)
	if err != nil {
		t.Fatal(err)
	}
	var against []string
	sum := 0.0
	for r, day := range days {
		if rounds > 1 {
			fmt.Fprintf(&report, "\n### Round %d of %d (runs in the order %s)\n", r+1, rounds, strings.Join(day.Order, ", "))
		}
		report.WriteString("\n")
		if err := bench.WriteReplayMarkdown(&report, table, 100-headroom, day.runs); err != nil {
			t.Fatal(err)
		}
		if a, ok := autotune.AutoAgainstOracle(day.runs); ok {
			against, sum = append(against, fmt.Sprintf("%+.1f%%", a*100)), sum+a
		}
		report.WriteString("\nThe tuner's reading of the load (status.tuning.loadClients, by Little's law) against the clients running, per step:\n\n| clients | readings |\n|---|---|\n")
		at := 0
		for _, step := range schedule {
			var got []string
			for ; at < len(day.Readings) && day.Readings[at].Clients == step.Clients && len(got) < int(step.Duration/dayWindow); at++ {
				got = append(got, day.Readings[at].ReadAs)
			}
			fmt.Fprintf(&report, "| %g | %s |\n", step.Clients, strings.Join(got, ", "))
		}
	}
	if rounds > 1 {
		fmt.Fprintf(&report, "\nAuto's time-weighted p90 against the oracle's, round by round: %s; mean %+.1f%%.\n", strings.Join(against, ", "), sum/float64(len(against))*100)
	}
	t.Logf("\n%s", report.String())
	var svg bytes.Buffer
	if err := bench.WriteReplaySVG(&svg, "live day "+scheduleSpec, schedule, dayWindow, days[0].runs); err != nil {
		t.Fatal(err)
	}
	raw, err := json.MarshalIndent(map[string]any{"rounds": days}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, body := range map[string][]byte{"day.md": report.Bytes(), "day.svg": svg.Bytes(), "windows.json": raw} {
		if err := os.WriteFile(filepath.Join(out, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// specSlices is the spec's concurrent segment search that puts s in force.
func specSlices(s indexspec.Slices) v1alpha1.ConcurrentSegmentSearch {
	settings := s.Settings()
	n, _ := strconv.Atoi(settings[indexspec.SettingMaxSliceCount])
	return v1alpha1.ConcurrentSegmentSearch{Mode: settings[indexspec.SettingConcurrentMode], MaxSliceCount: int32(n)}
}

// envInt reads a whole number from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}
