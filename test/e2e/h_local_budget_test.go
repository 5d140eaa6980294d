package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
)

// localBudget is the operator's --local-benchmark-max-bytes as the chart installs it (the
// flag's default).
const localBudget = 256 << 20

// TestTwoLocalRunsAtTheBudgetEdgeStayUnderTheLimit: two Local BenchmarkRuns on two indexes, each holding
// just under half the operator's Local budget with its byte representation's second copy,
// run side by side in the operator's pod under the chart's memory limit, while a third,
// small one waits for memory until they end. The operator process's peak RSS (VmHWM, read
// from /proc on the node) stays under the container's limit and the container never
// restarts: the budget counts every copy, and GOMEMLIMIT comes from the limit.
func TestTwoLocalRunsAtTheBudgetEdgeStayUnderTheLimit(t *testing.T) {
	integration(t)
	ctx := context.Background()
	sc := sandboxCluster(t)
	pod := operatorPod(t)
	limit := pod.Spec.Containers[0].Resources.Limits.Memory().Value()
	if limit == 0 {
		t.Fatal("the chart's operator container has no memory limit")
	}
	restarts := pod.Status.ContainerStatuses[0].RestartCount
	pid, memCgroup := operatorProcess(t, string(pod.UID))
	rssBefore := procStatus(t, pid, "VmRSS")

	// The widest vectors admission takes: few documents (fast to index), many bytes, and a
	// bulk body of 1,000 of them would take 256 MB.
	const dim, queries = 16000, 16
	perRun := int32(0)
	for count := int32(100); ; count += 10 {
		w := benchrun.Workload{K: 10, Generated: generated(count, queries, dim)}
		need, err := w.LocalBytes([]v1alpha1.VectorRepresentation{"byte"})
		if err != nil {
			t.Fatal(err)
		}
		if 2*need > localBudget {
			break
		}
		perRun = count
	}
	big := []string{"budget-a", "budget-b"}
	runs := map[string]*v1alpha1.BenchmarkRun{}
	for _, name := range append(big, "budget-c") {
		index := remoteIndex(name, sc.Name)
		index.Spec.Fields[0].Dimension = dim
		if err := k8s.Create(ctx, index); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), index) })
		waitReady(t, index, func() []metav1.Condition { return index.Status.Conditions }, 3*time.Minute)
	}
	for _, name := range append(big, "budget-c") {
		count := perRun
		if name == "budget-c" {
			count = 100 // 19 MiB: still more than the two leave
		}
		run := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: searchNamespace}, Spec: v1alpha1.BenchmarkRunSpec{
			IndexRef: v1alpha1.LocalObjectReference{Name: name},
			Workload: v1alpha1.BenchmarkWorkload{Dataset: v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: count, Queries: queries, Seed: 7}},
				Warmup: metav1.Duration{Duration: time.Second}, Duration: metav1.Duration{Duration: 2 * time.Second}},
			SliceCounts: []int32{1}, Clients: []int32{1},
			Representations: []v1alpha1.VectorRepresentation{"byte"},
			Runner:          v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerLocal},
		}}
		if err := k8s.Create(ctx, run); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), run) })
		runs[name] = run
		if name == big[1] {
			// The small run comes last, so the two big ones hold the budget first.
			time.Sleep(3 * time.Second)
		}
	}

	// Every 250 ms: the phases, the operator's RSS, and whether the two big runs ran at
	// once while the small one waited for memory.
	var (
		mu                  sync.Mutex
		peakRSS             int64
		together, queuedMsg string
	)
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			phases := map[string]string{}
			var waiting string
			for name, run := range runs {
				got := &v1alpha1.BenchmarkRun{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
					continue
				}
				phases[name] = got.Status.Phase
				if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing); name == "budget-c" && c != nil && c.Reason == v1alpha1.ReasonQueued {
					waiting = c.Message
				}
			}
			rss, _ := readProcStatus(pid, "VmRSS")
			mu.Lock()
			peakRSS = max(peakRSS, rss)
			if phases[big[0]] == v1alpha1.BenchmarkRunning && phases[big[1]] == v1alpha1.BenchmarkRunning && together == "" {
				together = time.Now().Format(time.TimeOnly)
			}
			if together != "" && waiting != "" && phases[big[0]] == v1alpha1.BenchmarkRunning && queuedMsg == "" {
				queuedMsg = waiting
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	started := time.Now()
	for _, name := range append(big, "budget-c") {
		if err := box.WaitSucceeded(ctx, runs[name], 15*time.Minute); err != nil {
			close(stop)
			<-sampled
			t.Fatal(err)
		}
		t.Logf("%s Succeeded after %s", name, time.Since(started).Round(time.Second))
	}
	close(stop)
	<-sampled

	need, _ := benchrun.Workload{K: 10, Generated: generated(perRun, queries, dim)}.LocalBytes([]v1alpha1.VectorRepresentation{"byte"})
	now := operatorPod(t)
	hwm := procStatus(t, pid, "VmHWM")
	cgroupPeak, _ := strconv.ParseInt(strings.TrimSpace(readFile(filepath.Join(memCgroup, "memory.max_usage_in_bytes"))), 10, 64)
	failcnt := strings.TrimSpace(readFile(filepath.Join(memCgroup, "memory.failcnt")))
	t.Logf("two Local runs of %d × %d-d vectors with a byte copy, %s each (%s together, budget %s), ran together from %s; the small one waited: %q",
		perRun, dim, benchrun.MiB(need), benchrun.MiB(2*need), benchrun.MiB(localBudget), together, queuedMsg)
	t.Logf("operator process: RSS before %s, highest sampled during %s, VmHWM %s; container memory cgroup peak %s (page cache included), failcnt %s; limit %s; restarts %d → %d",
		benchrun.MiB(rssBefore), benchrun.MiB(peakRSS), benchrun.MiB(hwm), benchrun.MiB(cgroupPeak), failcnt, benchrun.MiB(limit),
		restarts, now.Status.ContainerStatuses[0].RestartCount)
	if together == "" {
		t.Errorf("the two runs at the budget's edge never ran at the same time")
	}
	if queuedMsg == "" || !strings.Contains(queuedMsg, "waiting for memory") {
		t.Errorf("the third run did not wait for memory while the two held the budget (%q)", queuedMsg)
	}
	if hwm > limit {
		t.Errorf("the operator's peak RSS %s is over its limit %s", benchrun.MiB(hwm), benchrun.MiB(limit))
	}
	if now.UID != pod.UID || now.Status.ContainerStatuses[0].RestartCount != restarts {
		t.Errorf("the operator restarted during the runs (pod %s → %s, restarts %d → %d)", pod.UID, now.UID, restarts, now.Status.ContainerStatuses[0].RestartCount)
	}
}

func generated(count, queries int32, dim int) *dataset.Spec {
	return &dataset.Spec{Count: int(count), Queries: int(queries), Dim: dim, Seed: 7}
}

// operatorProcess is the PID of the operator's manager process and its container's memory
// cgroup, found under the node's cgroup by the pod's UID.
func operatorProcess(t *testing.T, uid string) (int, string) {
	t.Helper()
	podDir, ok := podCgroups(filepath.Join("/sys/fs/cgroup/memory", cluster.Cgroup(), "pods"))[uid]
	if !ok {
		t.Fatalf("no memory cgroup for the operator pod %s", uid)
	}
	entries, err := os.ReadDir(podDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(podDir, e.Name())
		for _, field := range strings.Fields(readFile(filepath.Join(dir, "cgroup.procs"))) {
			pid, _ := strconv.Atoi(field)
			if cmdline := readFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(cmdline, "manager\x00") {
				return pid, dir
			}
		}
	}
	t.Fatalf("no manager process in the operator pod's cgroup %s", podDir)
	return 0, ""
}

// readProcStatus is a /proc/<pid>/status size field (VmRSS, VmHWM) in bytes.
func readProcStatus(pid int, field string) (int64, error) {
	for _, line := range strings.Split(readFile(fmt.Sprintf("/proc/%d/status", pid)), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("process %d has no %s (gone?)", pid, field)
}

func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	v, err := readProcStatus(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
