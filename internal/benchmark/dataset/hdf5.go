package dataset

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
)

// HDF5Set is a public benchmark dataset: base vectors, query vectors and, per query, the ids
// of its true nearest neighbours, nearest first.
type HDF5Set struct {
	Train, Test Vectors
	Neighbors   [][]int
}

// Exact is the set's ground truth in the form recall is scored against, cut to k.
func (s HDF5Set) Exact(k int) [][]Neighbor {
	out := make([][]Neighbor, len(s.Neighbors))
	for q, ids := range s.Neighbors {
		for _, id := range ids[:min(k, len(ids))] {
			out[q] = append(out[q], Neighbor{ID: id})
		}
	}
	return out
}

// ReadHDF5 reads the train, test and neighbors datasets of an HDF5 file in the layout of
// ann-benchmarks and OpenSearch Benchmark's vectorsearch workload. The file is decoded by
// h5py (hack/hdf5_export.py, run with python from the project's venv): no HDF5 reader for Go
// is available from the module proxy, and a partial one written here would be worse.
func ReadHDF5(path, python, exportScript string) (HDF5Set, error) {
	dir, err := os.MkdirTemp("", "hdf5-export-*")
	if err != nil {
		return HDF5Set{}, err
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command(python, exportScript, path, dir).CombinedOutput(); err != nil {
		return HDF5Set{}, fmt.Errorf("reading %s with h5py: %w\n%s", path, err, out)
	}
	var set HDF5Set
	if set.Train, err = readFloat32(filepath.Join(dir, "train.bin")); err != nil {
		return set, err
	}
	if set.Test, err = readFloat32(filepath.Join(dir, "test.bin")); err != nil {
		return set, err
	}
	if set.Test.Dim != set.Train.Dim {
		return set, fmt.Errorf("%s: test vectors have dimension %d, train vectors %d", path, set.Test.Dim, set.Train.Dim)
	}
	rows, cols, raw, err := readArray(filepath.Join(dir, "neighbors.bin"))
	if err != nil {
		return set, err
	}
	if rows != set.Test.Len() {
		return set, fmt.Errorf("%s: %d neighbour lists for %d test vectors", path, rows, set.Test.Len())
	}
	set.Neighbors = make([][]int, rows)
	for r := 0; r < rows; r++ {
		set.Neighbors[r] = make([]int, cols)
		for c := 0; c < cols; c++ {
			set.Neighbors[r][c] = int(int32(binary.LittleEndian.Uint32(raw[(r*cols+c)*4:])))
		}
	}
	return set, nil
}

func readFloat32(path string) (Vectors, error) {
	rows, cols, raw, err := readArray(path)
	if err != nil {
		return Vectors{}, err
	}
	v := Vectors{Dim: cols, Data: make([]float32, rows*cols)}
	for i := range v.Data {
		v.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[i*4:]))
	}
	return v, nil
}

// readArray reads the export format: int32 rows, int32 cols, then rows*cols 4-byte values.
func readArray(path string) (rows, cols int, data []byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, nil, err
	}
	defer f.Close()
	var shape [2]int32
	if err := binary.Read(f, binary.LittleEndian, &shape); err != nil {
		return 0, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err = io.ReadAll(f)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(data) != int(shape[0])*int(shape[1])*4 {
		return 0, 0, nil, fmt.Errorf("%s: %d bytes for a %d×%d array", path, len(data), shape[0], shape[1])
	}
	return int(shape[0]), int(shape[1]), data, nil
}
