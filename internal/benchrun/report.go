package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
)

// StepCell is what a Workflow's measuring step hands the reporter.
type StepCell struct {
	bench.Cell
	Cores       int  `json:"cores"`
	Segments    int  `json:"segments"`
	RecallValid bool `json:"recallValid"`
	// CPUValid: the cell's CPU was measured on the nodes (OpenSearch Benchmark measures none).
	CPUValid bool `json:"cpuValid"`
	// VariantNodes is the cell's variant as its nodes reported it, for a run with variants.
	VariantNodes *v1alpha1.BenchmarkVariantResult `json:"variantNodes,omitempty"`
	// KNNEngine is the measured field's engine.
	KNNEngine string `json:"knnEngine,omitempty"`
}

// ParseCells reads the measure steps' cells. Argo aggregates a fanned-out step's output
// parameters as a JSON array of their texts, so each element may itself be JSON text.
func ParseCells(cells, engine string) (Result, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(cells), &raw); err != nil {
		return Result{}, fmt.Errorf("--cells: %w", err)
	}
	res := Result{Engine: engine, RecallValid: true, CPUValid: true}
	for i, r := range raw {
		var text string
		if json.Unmarshal(r, &text) == nil {
			r = json.RawMessage(text)
		}
		var c StepCell
		if err := json.Unmarshal(r, &c); err != nil {
			return res, fmt.Errorf("--cells[%d]: %w", i, err)
		}
		res.Cells = append(res.Cells, c.Cell)
		res.Cores, res.Segments, res.KNNEngine = c.Cores, c.Segments, c.KNNEngine
		res.RecallValid = res.RecallValid && c.RecallValid
		res.CPUValid = res.CPUValid && c.CPUValid
		if v := c.VariantNodes; v != nil && !slices.ContainsFunc(res.Variants, func(o v1alpha1.BenchmarkVariantResult) bool { return o.Name == v.Name }) {
			res.Variants = append(res.Variants, *v)
		}
	}
	if len(res.Cells) == 0 {
		return res, fmt.Errorf("--cells holds no cells")
	}
	return res, nil
}

// Post writes the result into the run's status, on top of what the operator wrote.
func Post(ctx context.Context, k8s client.Client, key types.NamespacedName, res Result) error {
	var run v1alpha1.BenchmarkRun
	if err := k8s.Get(ctx, key, &run); err != nil {
		return err
	}
	patch := client.MergeFrom(run.DeepCopy())
	if err := res.Apply(&run, DefaultParams); err != nil {
		return err
	}
	return k8s.Status().Patch(ctx, &run, patch)
}
