package benchrun

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
)

func TestLocalBytesCountsEveryCopy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "set.hdf5")
	if err := os.WriteFile(file, make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := func(count, queries, dim int) *dataset.Spec {
		return &dataset.Spec{Count: count, Queries: queries, Dim: dim}
	}
	const mib = 1 << 20
	// One bulk buffer per run, its size by the dimension (bench.IngestBufferBytes).
	buf32, buf256, buf1024, buf0 := bench.IngestBufferBytes(32), bench.IngestBufferBytes(256), bench.IngestBufferBytes(1024), bench.IngestBufferBytes(0)
	cases := []struct {
		name   string
		w      Workload
		reps   []v1alpha1.VectorRepresentation
		need   int64
		budget int64
		fits   bool
	}{
		{"small generated", Workload{K: 10, Generated: gen(1000, 100, 32)}, nil, (1100*32*4 + 100*10*8) + buf32, 256 * mib, true},
		{"exactly the budget", Workload{Generated: gen(1024, 0, 256)}, nil, mib + buf256, mib + buf256, true},
		{"one vector over", Workload{Generated: gen(1024, 1, 256)}, nil, mib + 256*4 + 8 + buf256, mib + buf256, false},
		{"byte makes a second full-size copy", Workload{Generated: gen(1024, 0, 256)}, []v1alpha1.VectorRepresentation{"float", "byte"}, 2*mib + buf256, 2*mib + buf256, true},
		{"byte over the budget its vectors alone fit", Workload{Generated: gen(1024, 0, 256)}, []v1alpha1.VectorRepresentation{"byte"}, 2*mib + buf256, mib + buf256, false},
		{"binary copies an eighth", Workload{Generated: gen(1024, 0, 256)}, []v1alpha1.VectorRepresentation{"binary"}, mib + mib/8 + 1 + buf256, 2*mib + buf256, true},
		{"the largest copy only: one representation at a time", Workload{Generated: gen(1024, 0, 256)}, []v1alpha1.VectorRepresentation{"binary", "byte"}, 2*mib + buf256, 2*mib + buf256, true},
		{"the admission maximum at a wide dimension", Workload{Generated: gen(200000, 2000, 1024)}, nil, 202000*1024*4 + 2000*8 + buf1024, 256 * mib, false},
		{"the bulk body of the widest vectors", Workload{Generated: gen(100, 0, 16000)}, nil, 100*16000*4 + bench.BulkBodyBytes + 2*(256+16*16000), 256 * mib, true},
		{"hdf5 under", Workload{HDF5: file}, nil, 3*mib + buf0, 4*mib + buf0, true},
		{"hdf5 with byte over", Workload{HDF5: file}, []v1alpha1.VectorRepresentation{"byte"}, 6*mib + buf0, 4*mib + buf0, false},
	}
	for _, c := range cases {
		need, err := c.w.LocalBytes(c.reps)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		err = FitsLocal(need, c.budget)
		if need != c.need || (err == nil) != c.fits || (err != nil && !errors.Is(err, ErrTooLarge)) {
			t.Errorf("%s: need %d (%v), want %d, fits=%v", c.name, need, err, c.need, c.fits)
		}
	}
	if _, err := (Workload{HDF5: filepath.Join(t.TempDir(), "missing")}).LocalBytes(nil); err == nil {
		t.Error("a missing file: want a read error")
	}
}

func TestRestoreBodyResetsWhatWasNotSet(t *testing.T) {
	body := RestoreBody(map[string]string{"index.refresh_interval": "", "index.search.concurrent.max_slice_count": "4"})
	if v, ok := body["index.refresh_interval"]; !ok || v != nil {
		t.Errorf("an unset setting must be reset with null, got %v", body)
	}
	if body["index.search.concurrent.max_slice_count"] != "4" {
		t.Errorf("a set setting must be put back as it was, got %v", body)
	}
}

func TestFingerprintNamesTheBaseVectors(t *testing.T) {
	a := Workload{Field: "embedding", Generated: &dataset.Spec{Count: 1000, Queries: 10, Dim: 32, Seed: 1}}
	b := Workload{Field: "embedding", Generated: &dataset.Spec{Count: 1000, Queries: 500, Dim: 32, Seed: 1}}
	c := Workload{Field: "embedding", Generated: &dataset.Spec{Count: 1000, Queries: 10, Dim: 32, Seed: 2}}
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("the query count does not change the base vectors, nor may it change the fingerprint")
	}
	if a.Fingerprint() == c.Fingerprint() {
		t.Error("another seed is another dataset")
	}
}

// BenchmarkLargestAcceptedLocalDataset materializes the largest dataset a Local run is
// accepted with (admission: 200000 vectors, 2000 queries; the default 256 MiB budget sets
// the widest dimension) — the vectors and exact neighbours the operator holds — and
// reports the process's peak RSS.
func BenchmarkLargestAcceptedLocalDataset(b *testing.B) {
	const budget = 256 << 20
	var w Workload
	for dim := budget / ((200000 + 2000) * 4); ; dim-- {
		w = Workload{Field: "embedding", K: 10, Generated: &dataset.Spec{Count: 200000, Queries: 2000, Dim: dim, Seed: 1}}
		need, err := w.LocalBytes(nil)
		if err != nil {
			b.Fatal(err)
		}
		if FitsLocal(need, budget) == nil {
			break
		}
	}
	for b.Loop() {
		d, err := w.Materialize(HDF5Reader{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.KeepAlive(d)
	}
	b.ReportMetric(float64(w.Generated.Dim), "dim")
	b.ReportMetric(float64(peakRSS(b))/(1<<20), "peakRSS-MiB")
}

// peakRSS is the process's high-water resident set (VmHWM), in bytes.
func peakRSS(b *testing.B) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

func TestRunnerAllowlists(t *testing.T) {
	list := RunnerAllowlist{
		WorkflowTemplates: []string{"vectorpilot-benchmark-sweep", "team-bench-*"},
		Images:            []string{"registry.example.com/vectorpilot:*", "ghcr.io/acme/bench:1.2.3"},
		ServiceAccounts:   []string{"vectorpilot-benchmark"},
	}
	sweep := &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep"}
	cases := []struct {
		name   string
		runner v1alpha1.BenchmarkRunner
		ok     bool
	}{
		{"the template's defaults", v1alpha1.BenchmarkRunner{Type: "Argo", WorkflowTemplateRef: sweep}, true},
		{"an allowed template by prefix", v1alpha1.BenchmarkRunner{Type: "Argo", WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "team-bench-ivf"}}, true},
		{"another template of the namespace", v1alpha1.BenchmarkRunner{Type: "Argo", WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "deploy-production"}}, false},
		{"a look-alike template", v1alpha1.BenchmarkRunner{Type: "Argo", WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: "vectorpilot-benchmark-sweep-admin"}}, false},
		{"an allowed image by prefix", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, Image: "registry.example.com/vectorpilot:v0.3.0"}, true},
		{"an allowed image exactly", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, Image: "ghcr.io/acme/bench:1.2.3"}, true},
		{"another tag of an exact entry", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, Image: "ghcr.io/acme/bench:latest"}, false},
		{"an image from elsewhere", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, Image: "evil.example.com/miner:1"}, false},
		{"a look-alike registry", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, Image: "registry.example.com.evil.io/vectorpilot:1"}, false},
		{"the allowed service account", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, ServiceAccountName: "vectorpilot-benchmark"}, true},
		{"another service account", v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep, ServiceAccountName: "cluster-admin-sa"}, false},
	}
	for _, c := range cases {
		err := RunnerAllowed(c.runner, list)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want allowed=%v", c.name, err, c.ok)
		}
	}
	if err := RunnerAllowed(v1alpha1.BenchmarkRunner{Image: "x"}, RunnerAllowlist{}); err == nil {
		t.Error("with no allowlist, an explicit image must be refused")
	}
	if err := RunnerAllowed(v1alpha1.BenchmarkRunner{WorkflowTemplateRef: sweep}, RunnerAllowlist{}); err == nil || !strings.Contains(err.Error(), "spec.runner.workflowTemplateRef") {
		t.Errorf("with no allowlist, a template must be refused naming the field: %v", err)
	}
}
