package devenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// TestAssembledOpenSearchCarriesEveryFaissLevelTheCPURuns: the OpenSearch home the project
// assembles (the local node's, and the e2e image's) carries the faiss library of every
// level this CPU runs, as the official distribution carries every level. A pool may ask for
// any of them; the plugin picks the level from the CPU and the pool's settings, and a node
// whose level's library is missing dies at its first faiss graph (UnsatisfiedLinkError: the
// SIMD A/B's avx2 pod crash-looped so in a fresh clone, which built only generic and the
// best level).
func TestAssembledOpenSearchCarriesEveryFaissLevelTheCPURuns(t *testing.T) {
	testgate.Integration(t, "OpenSearch assembled from Maven, the k-NN native build")
	root := testsupport.Root(t)
	out, err := exec.Command("bash", filepath.Join(root, "hack", "install-opensearch.sh")).Output()
	if err != nil {
		t.Fatalf("hack/install-opensearch.sh: %v", err)
	}
	lib := filepath.Join(strings.TrimSpace(string(out)), "plugins", "opensearch-knn", "lib")
	detected, err := exec.Command("sh", "-c", simd.DetectScript()).Output()
	if err != nil {
		t.Fatal(err)
	}
	cpu := strings.TrimSpace(string(detected))
	cpuArch, cpuRank, known := simd.Rank(cpu)
	want := []string{"libopensearchknn_faiss.so"}
	for _, level := range []v1alpha1.SIMDLevel{v1alpha1.SIMDAVX2, v1alpha1.SIMDAVX512, v1alpha1.SIMDAVX512SPR} {
		arch, rank, _ := simd.Rank(string(level))
		if known && arch == cpuArch && rank <= cpuRank {
			want = append(want, "libopensearchknn_faiss_"+simd.FaissVariant(string(level))+".so")
		}
	}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(lib, name)); err != nil {
			t.Errorf("this CPU (%s) runs the level of %s, which %s lacks: %v", cpu, name, lib, err)
		}
	}
	t.Logf("CPU %s: %s needs %v", cpu, lib, want)
}
