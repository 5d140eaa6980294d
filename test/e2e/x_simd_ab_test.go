package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// TestSIMDABOnTheRealNode runs the SIMD A/B samples users start from
// (config/samples/*_simd_ab.yaml) on the real node, after the sandbox cluster is gone:
// a cluster_manager pool and two data pools, AVX2 and AVX-512-SPR, each pod pinned by the
// pool's node affinity to the CPU labels the node carries, its JVM started with the
// pool's -XX:UseAVX; the A/B BenchmarkRun (Local: Argo does not run here yet) measures the
// index's copy on each pool with queries pinned to it. What the run reports about each
// variant must be what the pods run: the asked level, the node's CPU, and the vector width
// Lucene says it uses in the pod's own log.
func TestSIMDABOnTheRealNode(t *testing.T) {
	integration(t)
	ctx := context.Background()
	ensureSearchNamespace(t)
	sc := &v1alpha1.SearchCluster{}
	if err := box.Sample("vectorpilot_v1alpha1_searchcluster_simd_ab.yaml", sc); err != nil {
		t.Fatal(err)
	}
	// One node, two cores: the pools as the sample has them, at the sandbox's size.
	sc.Namespace = searchNamespace
	box.RunHere(sc)
	for i := range sc.Spec.Managed.NodePools {
		p := &sc.Spec.Managed.NodePools[i]
		p.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		p.Storage.Size = resource.MustParse("1Gi")
	}
	applied := time.Now()
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	waitReady(t, sc, func() []metav1.Condition { return sc.Status.Conditions }, 8*time.Minute)
	t.Logf("A/B SearchCluster Ready %s after it was created", time.Since(applied).Round(time.Second))

	out, err := exec.Command("sh", "-c", simd.DetectScript()).Output()
	if err != nil {
		t.Fatal(err)
	}
	machineCPU := strings.TrimSpace(string(out))
	// Each data pool's level, and the vector width its JVM options give Lucene on this CPU.
	asked, width := map[string]string{}, map[string]string{}
	for _, p := range sc.Spec.Managed.NodePools {
		if slices.Contains(p.Roles, "data") {
			asked[p.Name] = string(p.SIMD)
			width[p.Name] = simd.LuceneVector(simd.JVMOptions(p.SIMD), machineCPU)
		}
	}
	_, has, _ := simd.Rank(box.NodeSIMD)
	_, avx512, _ := simd.Rank(string(v1alpha1.SIMDAVX512))
	if len(asked) == 2 && width["avx2"] == width["spr"] && has < avx512 {
		// RunHere lowered the spr pool to what the CPU has: no second vector width to compare.
		t.Skipf("this machine's CPU (%s) has no AVX-512: both pools run %s, no A/B of vector widths to run", box.NodeSIMD, width["avx2"])
	}
	if len(asked) != 2 || width["avx2"] == width["spr"] {
		t.Fatalf("the sample's data pools %v should ask for levels giving Lucene different widths, have %v", asked, width)
	}

	index := &v1alpha1.VectorIndex{}
	if err := box.Sample("vectorpilot_v1alpha1_vectorindex_simd_ab.yaml", index); err != nil {
		t.Fatal(err)
	}
	index.Namespace = searchNamespace
	if err := k8s.Create(ctx, index); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), index) })
	waitReady(t, index, func() []metav1.Condition { return index.Status.Conditions }, 3*time.Minute)

	run := &v1alpha1.BenchmarkRun{}
	if err := box.Sample("vectorpilot_v1alpha1_benchmarkrun_simd_ab.yaml", run); err != nil {
		t.Fatal(err)
	}
	run.Namespace = searchNamespace
	run.Spec.Runner = v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerLocal}
	run.Spec.Workload.Dataset.Generated.Count, run.Spec.Workload.Dataset.Generated.Queries = 10000, 100
	run.Spec.Workload.Warmup, run.Spec.Workload.Duration = metav1.Duration{Duration: time.Second}, metav1.Duration{Duration: 3 * time.Second}
	run.Spec.SliceCounts = []int32{1}
	runToSuccess(t, run, "A/B")

	// Each variant as the run observed it, against what its pod says.
	if len(run.Status.Variants) != 2 {
		t.Fatalf("status.variants %+v, want avx2 and spr", run.Status.Variants)
	}
	seen := map[string]bool{}
	for _, v := range run.Status.Variants {
		t.Logf("variant %s: nodes %s %v, simd %s, cpuSIMD %s, luceneVector %s, qpsRatio %s, p90Ratio %s",
			v.Name, v.Nodes, v.NodeNames, v.SIMD, v.CPUSIMD, v.LuceneVector, v.QPSRatio, v.P90Ratio)
		if len(v.NodeNames) != 1 || seen[v.NodeNames[0]] {
			t.Errorf("variant %s measured on nodes %v, want its pool's one node, not another variant's", v.Name, v.NodeNames)
			continue
		}
		seen[v.NodeNames[0]] = true
		if v.SIMD != asked[v.Name] || v.CPUSIMD != machineCPU || v.LuceneVector != width[v.Name] {
			t.Errorf("variant %s observed as simd %q cpu %q lucene %q, want %s, %s, %s", v.Name, v.SIMD, v.CPUSIMD, v.LuceneVector, asked[v.Name], machineCPU, width[v.Name])
		}
		// Pod names are node names; Lucene logs the width it chose the first time it scores.
		logged := luceneWidth(t, v.NodeNames[0])
		if "panama-"+logged != v.LuceneVector {
			t.Errorf("variant %s: status says %s, the pod %s logged preferredBitSize=%s", v.Name, v.LuceneVector, v.NodeNames[0], logged)
		}
		if ratio, err := strconv.ParseFloat(v.QPSRatio, 64); err != nil || ratio <= 0 {
			t.Errorf("variant %s: qpsRatio %q, want a measured ratio", v.Name, v.QPSRatio)
		}
	}
	cells := map[string]int{}
	for _, c := range run.Status.Results {
		t.Logf("cell variant=%s slices=%d clients=%d p90=%sms qps=%s cpu=%s%%", c.Variant, c.SliceCount, c.Clients, c.P90Ms, c.QPS, c.CPUPercent)
		if _, err := strconv.ParseFloat(c.CPUPercent, 64); err != nil {
			t.Errorf("cell %+v has no CPU from its variant's node", c)
		}
		cells[c.Variant]++
	}
	if cells["avx2"] != len(run.Spec.Clients) || cells["spr"] != len(run.Spec.Clients) {
		t.Errorf("cells per variant %v, want %d each", cells, len(run.Spec.Clients))
	}
	rec := run.Status.SIMDRecommendation
	if rec == nil || !slices.Contains([]string{asked["avx2"], asked["spr"]}, rec.Level) {
		t.Errorf("status.simdRecommendation %+v, want one of the measured levels", rec)
	} else {
		t.Logf("simdRecommendation: %s (variant %s, families %v): %s", rec.Level, rec.Variant, rec.InstanceFamilies, rec.Reason)
	}
	for _, r := range run.Status.Representations {
		t.Logf("representation %s: recall %s, p90 %sms, qps %s, hot %s B/doc, disk %s B/doc", r.Name, r.Recall, r.P90Ms, r.QPS, r.HotBytesPerDoc, r.DiskBytesPerDoc)
	}
	if len(run.Status.Representations) != len(run.Spec.Representations) || run.Status.RepresentationRecommendation == nil {
		t.Errorf("representations %+v, recommendation %+v: want every one measured and a recommendation", run.Status.Representations, run.Status.RepresentationRecommendation)
	} else {
		t.Logf("representationRecommendation: %+v", *run.Status.RepresentationRecommendation)
	}
	for _, reason := range []string{v1alpha1.ReasonSIMDRecommended, v1alpha1.ReasonRepresentationRecommended} {
		if !eventFor(t, run, reason) {
			t.Errorf("no %s Event on the run", reason)
		}
	}
	// The scratch indexes go with the run's end, when the operator puts the index's
	// settings back (the reconcile after Succeeded; status.restoreSettings clears then).
	waitFor(t, time.Minute, "the run's settings put back", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			return false, err.Error()
		}
		return run.Status.RestoreSettings == nil, fmt.Sprintf("status.restoreSettings %v", run.Status.RestoreSettings)
	})
	if listed := get(t, clientServiceURL(t, sc)+"/_cat/indices?h=index"); strings.Contains(listed, "-vpbench-") {
		t.Errorf("scratch indexes left after the run:\n%s", listed)
	}

	faissAB(t, index, run)
}

// faissAB runs the same A/B on a faiss index: each pool's nodes load the faiss library
// their level selects, and the run must report for each variant the library its pod
// logged loading, and name it in the recommendation.
func faissAB(t *testing.T, luceneIndex *v1alpha1.VectorIndex, luceneRun *v1alpha1.BenchmarkRun) {
	ctx := context.Background()
	index := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: luceneIndex.Name + "-faiss", Namespace: luceneIndex.Namespace}, Spec: *luceneIndex.Spec.DeepCopy()}
	index.Spec.Fields[0].Engine = "faiss"
	if err := k8s.Create(ctx, index); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), index) })
	waitReady(t, index, func() []metav1.Condition { return index.Status.Conditions }, 3*time.Minute)

	run := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: luceneRun.Name + "-faiss", Namespace: luceneRun.Namespace}, Spec: *luceneRun.Spec.DeepCopy()}
	run.Spec.IndexRef.Name = index.Name
	run.Spec.Representations = nil
	runToSuccess(t, run, "faiss A/B")

	libraries := map[string]string{}
	for _, v := range run.Status.Variants {
		t.Logf("variant %s: nodes %v, simd %s, cpuSIMD %s, faissLibrary %s, qpsRatio %s, p90Ratio %s", v.Name, v.NodeNames, v.SIMD, v.CPUSIMD, v.FaissLibrary, v.QPSRatio, v.P90Ratio)
		if len(v.NodeNames) != 1 {
			t.Errorf("variant %s measured on nodes %v, want its pool's one node", v.Name, v.NodeNames)
			continue
		}
		logged := faissLibraryLogged(t, v.NodeNames[0])
		if v.FaissLibrary != logged {
			t.Errorf("variant %s: status says faiss library %q, the pod %s logged loading %q", v.Name, v.FaissLibrary, v.NodeNames[0], logged)
		}
		libraries[v.Name] = v.FaissLibrary
	}
	if len(libraries) != 2 || libraries["avx2"] == libraries["spr"] {
		t.Errorf("faiss libraries by variant %v: want two different libraries", libraries)
	}
	for _, c := range run.Status.Results {
		t.Logf("cell variant=%s slices=%d clients=%d p90=%sms qps=%s cpu=%s%%", c.Variant, c.SliceCount, c.Clients, c.P90Ms, c.QPS, c.CPUPercent)
	}
	rec := run.Status.SIMDRecommendation
	if rec == nil || !strings.Contains(rec.Reason, "faiss library "+libraries[rec.Variant]) {
		t.Errorf("status.simdRecommendation %+v: want its reason to name the faiss library of the variant it recommends", rec)
	} else {
		t.Logf("simdRecommendation: %s (variant %s): %s", rec.Level, rec.Variant, rec.Reason)
	}
}

// runToSuccess creates a BenchmarkRun, deleted when the test ends, and waits until it
// succeeded.
func runToSuccess(t *testing.T, run *v1alpha1.BenchmarkRun, what string) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), run) })
	started := time.Now()
	if err := box.WaitSucceeded(ctx, run, 10*time.Minute); err != nil {
		// What the run's nodes went through says more than the client's EOF.
		var pods corev1.PodList
		_ = k8s.List(ctx, &pods, client.InNamespace(run.Namespace))
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				t.Logf("pod %s container %s: ready %v, restarts %d, last state %+v", p.Name, c.Name, c.Ready, c.RestartCount, c.LastTerminationState.Terminated)
				if c.RestartCount > 0 {
					// The termination message keeps the end of a stack; its cause is above.
					t.Logf("pod %s container %s, before its last restart:\n%s", p.Name, c.Name, fatalLines(p.Name, c.Name))
				}
			}
		}
		t.Fatal(err)
	}
	t.Logf("%s BenchmarkRun Succeeded in %s", what, time.Since(started).Round(time.Second))
}

// faissLibraryLogged is the faiss library the k-NN plugin logged loading in a pod.
func faissLibraryLogged(t *testing.T, pod string) string {
	t.Helper()
	variant, failed, err := simd.FaissLibrary(bytes.NewReader(openSearchLog(t, pod)))
	if err != nil || variant == "" {
		t.Fatalf("pod %s logged no faiss library loaded (failed %q, %v)", pod, failed, err)
	}
	return variant
}

var preferredBitSize = regexp.MustCompile(`Java vector incubator API enabled; uses preferredBitSize=(\d+)`)

// luceneWidth is the vector width Lucene logged in the pod's container log.
func luceneWidth(t *testing.T, pod string) string {
	t.Helper()
	m := preferredBitSize.FindSubmatch(openSearchLog(t, pod))
	if m == nil {
		t.Fatalf("pod %s never logged Lucene's vectorization line", pod)
	}
	return string(m[1])
}

// openSearchLog is the log of a pod's OpenSearch container.
func openSearchLog(t *testing.T, pod string) []byte {
	t.Helper()
	raw, err := podLog(pod, "opensearch", false)
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	return raw
}

// podLog is a container's log in the search namespace, of its previous run if asked.
func podLog(pod, container string, previous bool) ([]byte, error) {
	return cluster.Client.CoreV1().Pods(searchNamespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous}).DoRaw(context.Background())
}

// fatalLines are the lines of a container's previous log that say why it stopped: the
// errors and exceptions, not their stack frames (at most 20).
func fatalLines(pod, container string) string {
	raw, err := podLog(pod, container, true)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if len(out) < 20 && (strings.Contains(line, "Error") || strings.Contains(line, "Exception") || strings.Contains(line, "fatal")) && !strings.HasPrefix(strings.TrimSpace(line), "at ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// eventFor says whether an Event with reason was recorded about obj, and logs each.
func eventFor(t *testing.T, obj client.Object, reason string) bool {
	t.Helper()
	var events corev1.EventList
	if err := k8s.List(context.Background(), &events, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events.Items {
		if e.InvolvedObject.UID == obj.GetUID() && e.Reason == reason {
			t.Logf("Event %s (%s): %s", e.Reason, e.Action, e.Message)
			found = true
		}
	}
	return found
}
