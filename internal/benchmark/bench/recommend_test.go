package bench

import (
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
)

func result(name string, hot float64, cells ...autotune.Measurement) RepresentationResult {
	r := RepresentationResult{Representation: Representation{Name: name}, HotBytesPerDoc: hot}
	for _, m := range cells {
		r.HNSW = append(r.HNSW, Cell{Measurement: m})
	}
	return r
}

func TestRecommendRepresentation(t *testing.T) {
	results := []RepresentationResult{
		result("float", 600, autotune.Measurement{Clients: 1, Recall: 0.99, P90Ms: 4}),
		result("sq", 220, autotune.Measurement{Clients: 1, Recall: 0.96, P90Ms: 3}),
		result("byte", 220, autotune.Measurement{Clients: 1, Recall: 0.96, P90Ms: 2.5}),
		result("binary", 110, autotune.Measurement{Clients: 1, Recall: 0.40, P90Ms: 1}),
	}
	for _, tc := range []struct {
		target float64
		want   string
		met    bool
	}{
		{0.30, "binary", true},
		{0.90, "byte", true}, // as small as sq, faster
		{0.96, "byte", true},
		{0.99, "float", true},
		{0.995, "float", false}, // none meets it: the most accurate, flagged
	} {
		got, ok := RecommendRepresentation(results, tc.target)
		if !ok || got.Name != tc.want || got.Met != tc.met {
			t.Errorf("target %.3f: %+v, want %s met=%v", tc.target, got, tc.want, tc.met)
		}
	}
	if _, ok := RecommendRepresentation([]RepresentationResult{result("float", 600, autotune.Measurement{Clients: 2, Recall: 1})}, 0.9); ok {
		t.Error("a result without a single-client cell was judged")
	}
}

func variant(name string, qps1, qps2, exactQPS float64) VariantResult {
	r := result("float", 600,
		autotune.Measurement{Clients: 1, QPS: qps1, P90Ms: 1000 / qps1, Recall: 0.98},
		autotune.Measurement{Clients: 2, QPS: qps2, P90Ms: 2000 / qps2, Recall: 0.98})
	r.Exact = &Cell{Measurement: autotune.Measurement{Clients: 1, QPS: exactQPS, P90Ms: 1000 / exactQPS, Recall: 1}}
	return VariantResult{Variant: name, Results: []RepresentationResult{r}}
}

func TestRatiosAndSIMD(t *testing.T) {
	variants := []VariantResult{variant("scalar", 100, 150, 10), variant("avx2", 120, 180, 30), variant("avx512", 130, 200, 40)}
	ratios := Ratios(variants, "scalar")
	if len(ratios) != 6 {
		t.Fatalf("%d ratios, want 3 cells × 2 variants: %+v", len(ratios), ratios)
	}
	if r := ratios[2]; r.Variant != "avx2" || r.Cell != "exact" || r.QPS != 3 || r.P90Speedup != 3 || r.RecallDelta != 0 {
		t.Errorf("avx2 exact vs scalar: %+v, want 3× throughput and p90", r)
	}
	for _, tc := range []struct {
		cell    string
		minGain float64
		want    string
	}{
		{"hnsw/2", 0.05, "avx512"}, // +11 %
		{"hnsw/2", 0.15, "avx2"},
		{"exact", 0.25, "avx512"}, // +33 %
		{"hnsw/1", 0.10, "avx2"},  // +8 %
	} {
		got, ok := RecommendSIMD(variants, "avx512", "avx2", "float", tc.cell, tc.minGain)
		if !ok || got.Level != tc.want {
			t.Errorf("%s, min gain %.2f: %+v, want %s", tc.cell, tc.minGain, got, tc.want)
		}
	}
	if _, ok := RecommendSIMD(variants, "avx512", "avx2", "byte", "hnsw/1", 0.05); ok {
		t.Error("a representation nobody measured was recommended on")
	}
	if Ratios(variants, "neon") != nil {
		t.Error("ratios against a baseline nobody measured")
	}
}
