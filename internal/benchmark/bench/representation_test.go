package bench

import (
	"reflect"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
)

func TestRepresentationMapping(t *testing.T) {
	graph := map[string]any{"m": 16, "ef_construction": 128}
	for _, tc := range []struct {
		rep  Representation
		want map[string]any
	}{
		{Representations[0], map[string]any{"type": "knn_vector", "dimension": 128,
			"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2", "parameters": graph}}},
		{Representations[1], map[string]any{"type": "knn_vector", "dimension": 128,
			"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2",
				"parameters": map[string]any{"m": 16, "ef_construction": 128, "encoder": map[string]any{"name": "sq", "parameters": map[string]any{"bits": 7}}}}}},
		{Representations[2], map[string]any{"type": "knn_vector", "dimension": 128,
			"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2",
				"parameters": map[string]any{"m": 16, "ef_construction": 128, "encoder": map[string]any{"name": "sq", "parameters": map[string]any{"bits": 1}}}}}},
		{Representations[3], map[string]any{"type": "knn_vector", "dimension": 128, "data_type": "byte",
			"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "l2", "parameters": graph}}},
		{Representations[4], map[string]any{"type": "knn_vector", "dimension": 128, "data_type": "binary",
			"method": map[string]any{"name": "hnsw", "engine": "lucene", "space_type": "hamming", "parameters": graph}}},
		{Representations[5], map[string]any{"type": "knn_vector", "dimension": 128,
			"method": map[string]any{"name": "hnsw", "engine": "faiss", "space_type": "l2", "parameters": graph}}},
		{Representations[6], map[string]any{"type": "knn_vector", "dimension": 128, "compression_level": "2x",
			"method": map[string]any{"name": "hnsw", "engine": "faiss", "space_type": "l2", "parameters": graph}}},
		{Representations[7], map[string]any{"type": "knn_vector", "dimension": 128, "data_type": "binary",
			"method": map[string]any{"name": "hnsw", "engine": "faiss", "space_type": "hamming", "parameters": graph}}},
	} {
		if got := tc.rep.Mapping(128); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.rep.Name, got, tc.want)
		}
	}
}

func TestEncode(t *testing.T) {
	base := dataset.Vectors{Dim: 10, Data: []float32{
		0.5, -1, 0.25, 0, 1, -0.5, 0.1, 0.9, -0.9, 2,
		-2, 1, 0, 0, 0, 0, 0, 0, 0.01, -0.01,
	}}
	for _, tc := range []struct {
		rep  Representation
		want dataset.Vectors
	}{
		{Representations[0], base},
		{Representations[1], base},
		// Largest magnitude 2 → 127: scale 63.5, rounded half away from zero, clamped.
		{Representations[3], dataset.Vectors{Dim: 10, Data: []float32{
			32, -64, 16, 0, 64, -32, 6, 57, -57, 127,
			-127, 64, 0, 0, 0, 0, 0, 0, 1, -1,
		}}},
		// Ten dimensions → two bytes, the second holding two bits, high bit first:
		// 1 0 1 0 1 0 1 1 = 0xab = -85; then 0 1 = 0x40 = 64. 0 1 0 0 0 0 0 0 = 64; 1 0 = 0x80 = -128.
		{Representations[4], dataset.Vectors{Dim: 2, Data: []float32{-85, 64, 64, -128}}},
	} {
		got := NewEncoder(tc.rep, base).Encode(base)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.rep.Name, got, tc.want)
		}
	}
}
