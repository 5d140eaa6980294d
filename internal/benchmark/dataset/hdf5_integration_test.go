package dataset_test

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestReadHDF5 writes a file in the ann-benchmarks layout with h5py itself (vectors from our
// generator, neighbours by numpy brute force), reads it back, and checks every value and
// the ground truth against ExactKNN.
func TestReadHDF5(t *testing.T) {
	testgate.Integration(t, "h5py in the project's venv")
	root := testsupport.Root(t)
	python := filepath.Join(root, "bin", "venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("project venv missing at %s: run hack/install-python.sh (make test does)", python)
	}
	base, queries := dataset.Generate(dataset.Spec{Count: 600, Queries: 25, Dim: 24, Seed: 5})
	dir := t.TempDir()
	write := func(name string, v dataset.Vectors) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := binary.Write(f, binary.LittleEndian, v.Data); err != nil {
			t.Fatal(err)
		}
	}
	write("train.raw", base)
	write("test.raw", queries)
	file := filepath.Join(dir, "set.hdf5")
	makeFile := `
import sys, numpy as np, h5py
d = sys.argv[1]
train = np.fromfile(d + "/train.raw", dtype="<f4").reshape(-1, 24)
test = np.fromfile(d + "/test.raw", dtype="<f4").reshape(-1, 24)
dist = ((test[:, None, :] - train[None, :, :]) ** 2).sum(-1)
with h5py.File(d + "/set.hdf5", "w") as f:
    f["train"] = train
    f["test"] = test
    f["neighbors"] = np.argsort(dist, axis=1, kind="stable")[:, :100].astype("i8")
    f["distances"] = np.sort(dist, axis=1)[:, :100]
`
	if out, err := exec.Command(python, "-c", makeFile, dir).CombinedOutput(); err != nil {
		t.Fatalf("writing the HDF5 file with h5py: %v\n%s", err, out)
	}
	set, err := dataset.ReadHDF5(file, python, filepath.Join(root, "hack", "hdf5_export.py"))
	if err != nil {
		t.Fatal(err)
	}
	if set.Train.Len() != base.Len() || set.Test.Len() != queries.Len() || set.Train.Dim != 24 || len(set.Neighbors[0]) != 100 {
		t.Fatalf("shapes: train %d×%d, test %d, neighbours %d", set.Train.Len(), set.Train.Dim, set.Test.Len(), len(set.Neighbors[0]))
	}
	for i, x := range base.Data {
		if set.Train.Data[i] != x {
			t.Fatalf("train value %d = %v, wrote %v", i, set.Train.Data[i], x)
		}
	}
	exact := dataset.ExactKNN(base, queries, 10)
	if r := dataset.Recall(exact, idsOf(set.Exact(10))); r < 0.99 {
		t.Errorf("the file's neighbours agree with ExactKNN at recall %.3f, want ~1", r)
	}
}

func idsOf(ns [][]dataset.Neighbor) [][]int {
	out := make([][]int, len(ns))
	for q, row := range ns {
		for _, n := range row {
			out[q] = append(out[q], n.ID)
		}
	}
	return out
}
