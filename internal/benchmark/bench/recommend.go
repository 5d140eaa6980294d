package bench

import (
	"fmt"
	"math"
)

// VariantResult is the representation sweep of one JVM SIMD configuration of the same
// node, on the same segments.
type VariantResult struct {
	// Variant names the configuration: its SIMD level (avx512, avx2), or "scalar" for
	// Panama off.
	Variant string `json:"variant"`
	// Vectorization is what the node itself reported: Lucene's vectorization line.
	Vectorization string                 `json:"vectorization,omitempty"`
	JVMArguments  []string               `json:"jvmArguments,omitempty"`
	Results       []RepresentationResult `json:"results"`
}

// RepresentationChoice is the cheapest representation meeting a recall target: the
// least memory an HNSW search keeps hot, then the lowest p90 (one client).
type RepresentationChoice struct {
	Target         float64 `json:"target"`
	Name           string  `json:"name"`
	Recall         float64 `json:"recall"`
	HotBytesPerDoc float64 `json:"hotBytesPerDoc"`
	P90Ms          float64 `json:"p90Ms"`
	// Met is false when no representation reached the target: Name is then the one with
	// the highest recall.
	Met bool `json:"met"`
}

// oneClient is a result's single-client HNSW cell, the recall and latency a choice is
// judged on.
func (r RepresentationResult) oneClient() (Cell, bool) {
	for _, c := range r.HNSW {
		if c.Clients == 1 {
			return c, true
		}
	}
	return Cell{}, false
}

// RecommendRepresentation picks, from measured results only, the representation that
// meets target recall@k at the lowest cost.
func RecommendRepresentation(results []RepresentationResult, target float64) (RepresentationChoice, bool) {
	var best, closest RepresentationChoice
	found, measured := false, false
	for _, r := range results {
		c, ok := r.oneClient()
		if !ok {
			continue
		}
		choice := RepresentationChoice{Target: target, Name: r.Name, Recall: c.Recall, HotBytesPerDoc: r.HotBytesPerDoc, P90Ms: c.P90Ms}
		if !measured || choice.Recall > closest.Recall {
			closest, measured = choice, true
		}
		if c.Recall < target {
			continue
		}
		choice.Met = true
		if !found || choice.HotBytesPerDoc < best.HotBytesPerDoc ||
			(choice.HotBytesPerDoc == best.HotBytesPerDoc && choice.P90Ms < best.P90Ms) {
			best, found = choice, true
		}
	}
	if found {
		return best, true
	}
	return closest, measured
}

// Ratio compares one cell of a variant with the same cell of the baseline: > 1 means
// faster (throughput up, p90 down).
type Ratio struct {
	Representation string `json:"representation"`
	// Cell is "hnsw/1", "hnsw/2" (clients) or "exact".
	Cell       string  `json:"cell"`
	Variant    string  `json:"variant"`
	Baseline   string  `json:"baseline"`
	QPS        float64 `json:"qps"`
	P90Speedup float64 `json:"p90Speedup"`
	// RecallDelta is the variant's recall minus the baseline's: SIMD changes no answer,
	// so anything but 0 says the comparison is not like for like.
	RecallDelta float64 `json:"recallDelta"`
}

// cells are a result's cells by name.
func (r RepresentationResult) cells() map[string]Cell {
	out := map[string]Cell{}
	for _, c := range r.HNSW {
		out[fmt.Sprintf("hnsw/%d", c.Clients)] = c
	}
	if r.Exact != nil {
		out["exact"] = *r.Exact
	}
	return out
}

// Ratios are every variant's cells against the baseline variant's, for each
// representation both measured.
func Ratios(variants []VariantResult, baseline string) []Ratio {
	var base *VariantResult
	for i := range variants {
		if variants[i].Variant == baseline {
			base = &variants[i]
		}
	}
	if base == nil {
		return nil
	}
	baseCells := map[string]map[string]Cell{}
	for _, r := range base.Results {
		baseCells[r.Name] = r.cells()
	}
	var out []Ratio
	for _, v := range variants {
		if v.Variant == baseline {
			continue
		}
		for _, r := range v.Results {
			cells := r.cells()
			for _, name := range cellOrder {
				c, ok := cells[name]
				b, bok := baseCells[r.Name][name]
				if !ok || !bok || b.QPS == 0 || c.P90Ms == 0 {
					continue
				}
				out = append(out, Ratio{Representation: r.Name, Cell: name, Variant: v.Variant, Baseline: baseline,
					QPS: round2(c.QPS / b.QPS), P90Speedup: round2(b.P90Ms / c.P90Ms), RecallDelta: round4(c.Recall - b.Recall)})
			}
		}
	}
	return out
}

var cellOrder = []string{"hnsw/1", "hnsw/2", "hnsw/4", "exact"}

func round4(v float64) float64 { return math.Round(v*10000) / 10000 }

// SIMDChoice is the level a pool should ask for: the wider level only when it measurably
// pays, since the narrower runs on more instance families.
type SIMDChoice struct {
	Level string `json:"level"`
	// Gain is the wider level's throughput over the narrower one's (1.10 = +10 %), on the
	// cell the choice was made on.
	Gain   float64 `json:"gain"`
	Reason string  `json:"reason"`
}

// RecommendSIMD compares the wide (512-bit) and narrow (256-bit) variants on one
// representation's cell and asks for the wide level only when it gains at least minGain
// (0.05 = 5 %) throughput. ok is false when either was not measured.
func RecommendSIMD(variants []VariantResult, wide, narrow, representation, cell string, minGain float64) (SIMDChoice, bool) {
	for _, r := range Ratios(variants, narrow) {
		if r.Variant != wide || r.Representation != representation || r.Cell != cell {
			continue
		}
		gain := r.QPS
		if gain >= 1+minGain {
			return SIMDChoice{Level: wide, Gain: gain, Reason: fmt.Sprintf("%s gives %+.0f%% throughput over %s (%s %s), at least the %.0f%% asked",
				wide, (gain-1)*100, narrow, representation, cell, minGain*100)}, true
		}
		return SIMDChoice{Level: narrow, Gain: gain, Reason: fmt.Sprintf("%s gives %+.0f%% throughput over %s (%s %s), under the %.0f%% that pays for fewer instance families",
			wide, (gain-1)*100, narrow, representation, cell, minGain*100)}, true
	}
	return SIMDChoice{}, false
}
