package controllers

import (
	"context"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
)

// TestObserveFaissLibraries: each pool's faiss library is what its ready nodes' logs say
// (the lowest when they differ); a pool that loaded another variant than its simd selects,
// or failed to load one, is named; a log is read on from where the last read ended until
// it names the library, and not again after; pods gone are forgotten.
func TestObserveFaissLibraries(t *testing.T) {
	const loaded = "[2026-11-27T00:10:00,000][INFO ][o.o.k.j.KNNLibraryLoader ] [n] Loaded library: "
	logs := map[string]string{
		"v-fast-0":   loaded + "opensearchknn_common\n" + loaded + "opensearchknn_faiss_avx512\n",
		"v-fast-1":   "started\n",
		"v-slow-0":   loaded + "opensearchknn_faiss_avx512\n",
		"v-broken-0": "[ERROR][o.o.k.j.KNNLibraryLoader ] [n] Failed to load library: opensearchknn_faiss_avx2\n",
		"v-idle-0":   loaded + "opensearchknn_faiss_avx2\n",
	}
	var reads []string
	sinces := map[string]*metav1.Time{}
	r := &SearchClusterReconciler{PodLogs: func(_ context.Context, ns, pod, container string, since *metav1.Time) (io.ReadCloser, error) {
		if ns != "search" || container != "opensearch" {
			t.Errorf("log of %s/%s container %s", ns, pod, container)
		}
		reads = append(reads, pod)
		sinces[pod] = since
		return io.NopCloser(strings.NewReader(logs[pod])), nil
	}}
	pod := func(name, pool string, ready bool) rollout.Pod {
		return rollout.Pod{Name: name, Pool: pool, Ready: ready}
	}
	obs := poolObservation{
		pods:    []rollout.Pod{pod("v-fast-0", "fast", true), pod("v-fast-1", "fast", true), pod("v-slow-0", "slow", true), pod("v-broken-0", "broken", true), pod("v-idle-0", "idle", false)},
		podUIDs: map[string]types.UID{"v-fast-0": "u1", "v-fast-1": "u2", "v-slow-0": "u3", "v-broken-0": "u4", "v-idle-0": "u5"},
	}
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "search", UID: "c1"}}
	reset := func() {
		sc.Status.Pools = []v1alpha1.NodePoolStatus{{Name: "fast", SIMD: "avx512"}, {Name: "slow", SIMD: "avx2"}, {Name: "broken", SIMD: "avx2"}, {Name: "idle", SIMD: "avx2"}}
	}
	reset()
	got := r.observeFaissLibraries(context.Background(), sc, obs)
	want := "pool slow: its nodes loaded faiss library avx512, where their simd level and CPUs select avx2; pool broken: node v-broken-0 failed to load opensearchknn_faiss_avx2"
	if got.reason != v1alpha1.ReasonFaissLibraryMismatch || got.message != want {
		t.Errorf("finding %+v, want %s", got, want)
	}
	for i, want := range []string{"avx512", "avx512", "", ""} {
		if p := sc.Status.Pools[i]; p.FaissLibrary != want {
			t.Errorf("pool %s: faissLibrary %q, want %q", p.Name, p.FaissLibrary, want)
		}
	}
	if strings.Join(reads, ",") != "v-fast-0,v-fast-1,v-slow-0,v-broken-0" || sinces["v-fast-1"] != nil {
		t.Errorf("read %v (since %v), want every ready pod's whole log once", reads, sinces)
	}

	// Later: v-fast-1 loaded a lower variant; only its log is read, from the last read on.
	logs["v-fast-1"] = loaded + "opensearchknn_faiss_avx2\n"
	reads = nil
	reset()
	got = r.observeFaissLibraries(context.Background(), sc, obs)
	if strings.Join(reads, ",") != "v-fast-1" || sinces["v-fast-1"] == nil {
		t.Errorf("read %v since %v, want v-fast-1's log from the last read on", reads, sinces["v-fast-1"])
	}
	if p := sc.Status.Pools[0]; p.FaissLibrary != "avx2" || !strings.Contains(got.message, "pool fast: its nodes loaded faiss library avx2") {
		t.Errorf("pool fast: faissLibrary %q, finding %+v; want avx2, the lowest, named", p.FaissLibrary, got)
	}

	// Pods replaced are read again; the gone ones forgotten.
	obs.podUIDs = map[string]types.UID{"v-fast-0": "u9"}
	obs.pods = obs.pods[:1]
	reads = nil
	reset()
	r.observeFaissLibraries(context.Background(), sc, obs)
	if strings.Join(reads, ",") != "v-fast-0" || len(r.faiss["c1"]) != 1 {
		t.Errorf("read %v, remembered %v; want the new pod read, the gone ones forgotten", reads, r.faiss["c1"])
	}
}
