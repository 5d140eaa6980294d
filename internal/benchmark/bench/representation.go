package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
)

// Representation is how an index stores its vectors: the engine, the knn_vector data type
// and, for float vectors, Lucene's scalar quantization or faiss's compression levels. Each
// trades recall for memory differently; the sweep measures them on the same data and
// queries.
type Representation struct {
	Name string `json:"name"`
	// Engine is the k-NN engine: lucene when empty, or faiss (native graphs).
	Engine string `json:"engine,omitempty"`
	// DataType is the knn_vector data_type: float, byte or binary.
	DataType string `json:"dataType"`
	// Compression is faiss's in-memory compression level: 2x is fp16. (on_disk binary
	// quantization is left out: its graphs are not held in the k-NN cache, where the
	// sweep measures faiss's hot bytes.)
	Compression string `json:"compression,omitempty"`
	// Encoder is the Lucene HNSW encoder: "" (the vectors as they are) or "sq" (scalar
	// quantization of float vectors to Bits bits per dimension, searched on the quantized
	// copy; OpenSearch 3.6 takes 7 or 1 and requires it).
	Encoder string `json:"encoder,omitempty"`
	Bits    int    `json:"bits,omitempty"`
}

// Representations are the ones the Lucene and faiss engines offer for HNSW.
var Representations = []Representation{
	{Name: "float", DataType: "float"},
	{Name: "sq7", DataType: "float", Encoder: "sq", Bits: 7},
	{Name: "sq1", DataType: "float", Encoder: "sq", Bits: 1},
	{Name: "byte", DataType: "byte"},
	{Name: "binary", DataType: "binary"},
	{Name: "faiss-float", Engine: "faiss", DataType: "float"},
	{Name: "faiss-fp16", Engine: "faiss", DataType: "float", Compression: "2x"},
	{Name: "faiss-binary", Engine: "faiss", DataType: "binary"},
}

// Native says the representation's graphs are the faiss library's, held in native memory.
func (r Representation) Native() bool { return r.Engine == "faiss" }

// RepresentationsNamed are the representations of the names, in the table's order; a name
// not in the table is an error.
func RepresentationsNamed(names []string) ([]Representation, error) {
	var out []Representation
	for _, r := range Representations {
		if slices.Contains(names, r.Name) {
			out = append(out, r)
		}
	}
	if len(out) != len(names) {
		known := make([]string, len(Representations))
		for i, r := range Representations {
			known[i] = r.Name
		}
		return nil, fmt.Errorf("representations %v: each must be one of %s", names, strings.Join(known, ", "))
	}
	return out, nil
}

// SpaceType is the distance the representation is searched with: L2 for numbers, Hamming
// for bits.
func (r Representation) SpaceType() string {
	if r.DataType == "binary" {
		return "hamming"
	}
	return "l2"
}

// Mapping is the knn_vector field of an index in this representation, for float vectors
// of dimension dim (a binary field has one bit per float dimension).
func (r Representation) Mapping(dim int) map[string]any {
	// The graph parameters of the slice sweep's index, so figures compare across sweeps.
	params := map[string]any{"m": 16, "ef_construction": 128}
	if r.Encoder != "" {
		params["encoder"] = map[string]any{"name": r.Encoder, "parameters": map[string]any{"bits": r.Bits}}
	}
	engine := r.Engine
	if engine == "" {
		engine = "lucene"
	}
	method := map[string]any{"name": "hnsw", "engine": engine, "space_type": r.SpaceType(), "parameters": params}
	field := map[string]any{"type": "knn_vector", "dimension": dim, "method": method}
	if r.DataType != "float" {
		field["data_type"] = r.DataType
	}
	if r.Compression != "" {
		field["compression_level"] = r.Compression
	}
	return field
}

// Encoder turns float vectors into what this representation's field takes: bytes scaled
// so the largest magnitude of the base set maps to 127, bits packed eight to a signed
// byte (a bit is set for a positive dimension, the sign binarization), floats unchanged.
// scale comes from the base set and applies to queries too.
type Encoder struct {
	rep   Representation
	scale float64
}

// NewEncoder derives the byte scale from base.
func NewEncoder(rep Representation, base dataset.Vectors) Encoder {
	maxAbs := 0.0
	for _, x := range base.Data {
		maxAbs = math.Max(maxAbs, math.Abs(float64(x)))
	}
	scale := 1.0
	if maxAbs > 0 {
		scale = 127 / maxAbs
	}
	return Encoder{rep: rep, scale: scale}
}

// Encode converts every vector of v.
func (e Encoder) Encode(v dataset.Vectors) dataset.Vectors {
	switch e.rep.DataType {
	case "byte":
		out := dataset.Vectors{Dim: v.Dim, Data: make([]float32, len(v.Data))}
		for i, x := range v.Data {
			out.Data[i] = float32(max(-128, min(127, math.Round(float64(x)*e.scale))))
		}
		return out
	case "binary":
		bytes := (v.Dim + 7) / 8
		out := dataset.Vectors{Dim: bytes, Data: make([]float32, v.Len()*bytes)}
		for i := 0; i < v.Len(); i++ {
			row, packed := v.At(i), out.At(i)
			for b := range packed {
				var octet uint8
				for bit := 0; bit < 8 && b*8+bit < v.Dim; bit++ {
					if row[b*8+bit] > 0 {
						octet |= 0x80 >> bit
					}
				}
				packed[b] = float32(int8(octet))
			}
		}
		return out
	}
	return v
}
