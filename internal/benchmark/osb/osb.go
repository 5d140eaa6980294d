// Package osb reads OpenSearch Benchmark's test_run.json into the benchmark engine's cell
// format, so a sweep measured by OSB lands in the same result table as one measured by
// vectorpilot's own engine.
package osb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
)

// Task is the vector-search task of the shipped workload (hack/osb/workload).
const Task = "vector-search"

type stats map[string]any

func (s stats) get(key string) (float64, bool) {
	v, ok := s[key].(float64)
	return v, ok
}

type testRun struct {
	Results struct {
		OpMetrics []struct {
			Task        string  `json:"task"`
			Throughput  stats   `json:"throughput"`
			ServiceTime stats   `json:"service_time"`
			ErrorRate   float64 `json:"error_rate"`
		} `json:"op_metrics"`
		CorrectnessMetrics []struct {
			Task    string `json:"task"`
			RecallK stats  `json:"recall@k"`
		} `json:"correctness_metrics"`
	} `json:"results"`
}

// Parse reads the vector-search task's figures: service time percentiles (the time a
// request took, as vectorpilot's engine measures it), mean throughput and mean recall@k.
// CPU is not something OSB measures: the cell's CPUPercent stays 0, and its step says the
// cell has no CPU (benchrun.StepCell.CPUValid), so the run's status shows none.
func Parse(raw []byte) (autotune.Measurement, error) {
	var run testRun
	if err := json.Unmarshal(raw, &run); err != nil {
		return autotune.Measurement{}, fmt.Errorf("test_run.json: %w", err)
	}
	var m autotune.Measurement
	found := false
	for _, op := range run.Results.OpMetrics {
		if op.Task != Task {
			continue
		}
		found = true
		if op.ErrorRate > 0 {
			return m, fmt.Errorf("test_run.json: task %s had an error rate of %.2f%%", Task, op.ErrorRate*100)
		}
		for key, into := range map[string]*float64{"50_0": &m.P50Ms, "90_0": &m.P90Ms, "99_0": &m.P99Ms} {
			v, ok := op.ServiceTime.get(key)
			if !ok {
				return m, fmt.Errorf("test_run.json: task %s has no service_time %s", Task, key)
			}
			*into = round2(v)
		}
		if v, ok := op.Throughput.get("mean"); ok {
			m.QPS = round2(v)
		}
	}
	if !found {
		return m, fmt.Errorf("test_run.json has no op_metrics for task %s", Task)
	}
	for _, c := range run.Results.CorrectnessMetrics {
		if c.Task == Task {
			if v, ok := c.RecallK.get("mean"); ok {
				m.Recall = v
			}
		}
	}
	return m, nil
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// WriteBigANN writes queries and their true neighbours in the Big ANN Benchmarks binary
// format OpenSearch Benchmark reads (data_set_format bigann): queries.fbin (rows, dim,
// float32s) and neighbors.bin (rows, k, uint32 ids, float32 distances).
func WriteBigANN(dir string, queries dataset.Vectors, exact [][]dataset.Neighbor) (queriesPath, neighborsPath string, err error) {
	queriesPath, neighborsPath = filepath.Join(dir, "queries.fbin"), filepath.Join(dir, "neighbors.bin")
	le := binary.LittleEndian
	q := le.AppendUint32(le.AppendUint32(nil, uint32(queries.Len())), uint32(queries.Dim))
	for _, x := range queries.Data {
		q = le.AppendUint32(q, math.Float32bits(x))
	}
	if err := os.WriteFile(queriesPath, q, 0o644); err != nil {
		return "", "", err
	}
	k := len(exact[0])
	n := le.AppendUint32(le.AppendUint32(nil, uint32(len(exact))), uint32(k))
	for _, row := range exact {
		for _, nb := range row {
			n = le.AppendUint32(n, uint32(nb.ID))
		}
	}
	for _, row := range exact {
		for _, nb := range row {
			n = le.AppendUint32(n, math.Float32bits(nb.Distance))
		}
	}
	return queriesPath, neighborsPath, os.WriteFile(neighborsPath, n, 0o644)
}
