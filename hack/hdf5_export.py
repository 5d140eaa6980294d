"""Exports the train, test and neighbors datasets of an ann-benchmarks / OpenSearch
Benchmark HDF5 file as raw little-endian arrays that internal/benchmark/dataset reads: for each
dataset a file NAME.bin holding int32 rows, int32 cols, then rows*cols values (float32 for
train and test, int32 for neighbors)."""
import sys

import h5py
import numpy as np


def main(path, out):
    with h5py.File(path, "r") as f:
        for name, dtype in (("train", "<f4"), ("test", "<f4"), ("neighbors", "<i4")):
            if name not in f:
                sys.exit(f"{path}: no dataset {name!r} (found {sorted(f.keys())})")
            data = np.asarray(f[name], dtype=dtype)
            if data.ndim != 2:
                sys.exit(f"{path}: dataset {name!r} has {data.ndim} dimensions, want 2")
            with open(f"{out}/{name}.bin", "wb") as w:
                w.write(np.array(data.shape, dtype="<i4").tobytes())
                w.write(np.ascontiguousarray(data).tobytes())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
