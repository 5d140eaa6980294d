package controllers_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestSnapshotToS3DeleteAndRestore: 10,000 vectors, a SnapshotPolicy's scheduled snapshot to a
// real S3-compatible server, the index deleted with its VectorIndex, then restored through a
// new VectorIndex: the same document count and the same top-10 for 50 fixed queries.
func TestSnapshotToS3DeleteAndRestore(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	osClient, url := startS3Node(t, "ctl-snapshot", "vectors-snapshots", "")
	e.cluster("vectors", url)

	source := luceneIndex(e, "source")
	source.Spec.Shards = 2
	source.Labels = map[string]string{"backup": "nightly"}
	e.create(source)
	e.waitIndexReady(source)
	base, queries := dataset.Generate(dataset.Spec{Count: 10000, Queries: 50, Dim: 32, Seed: 99})
	ingest(t, osClient, source.Spec.IndexName, base)
	before, err := bench.SearchIDs(t.Context(), osClient, source.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}

	// A policy with a bucket that does not exist says so and does not crash-loop.
	broken := &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: e.ns},
		Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Schedule: "@hourly",
			Repository: v1alpha1.SnapshotRepository{Name: "nowhere", S3: &v1alpha1.S3Repository{Bucket: "no-such-bucket", Client: "default"}}},
	}
	e.create(broken)
	e.waitCondition(broken, func() []metav1.Condition { return broken.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "RepositoryError", 60*time.Second)

	policy := &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: e.ns},
		Spec: v1alpha1.SnapshotPolicySpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"},
			Repository: v1alpha1.SnapshotRepository{Name: "s3-backups", S3: &v1alpha1.S3Repository{Bucket: "vectors-snapshots", BasePath: e.ns, Client: "default"}},
			// Every minute: the first run comes at the next minute boundary.
			Schedule:      "* * * * *",
			Retention:     v1alpha1.SnapshotRetention{MaxCount: ptrInt32(3)},
			IndexSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"backup": "nightly"}},
		},
	}
	e.create(policy)
	var snap v1alpha1.VectorSnapshot
	e.eventually(150*time.Second, func() (bool, string) {
		var list v1alpha1.VectorSnapshotList
		if err := e.k8s.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{controllers.PolicyLabel: "nightly"}); err != nil {
			return false, err.Error()
		}
		for _, s := range list.Items {
			if s.Status.Phase == v1alpha1.SnapshotSucceeded {
				snap = s
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d snapshots of the policy, none Succeeded yet", len(list.Items))
	})
	// The policy reports Ready once it has taken one.
	e.waitCondition(policy, func() []metav1.Condition { return policy.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "", 30*time.Second)
	took := time.Duration(snap.Status.DurationMillis) * time.Millisecond
	t.Logf("snapshot %s: %d bytes, %d/%d shards in %s (%.1f MB/s)", snap.Status.SnapshotName, snap.Status.SizeBytes, snap.Status.Shards.Successful, snap.Status.Shards.Total,
		took, float64(snap.Status.SizeBytes)/1e6/took.Seconds())
	if snap.Status.Shards.Failed != 0 || len(snap.Status.Indices) != 1 || snap.Status.Indices[0] != source.Spec.IndexName {
		t.Errorf("snapshot status = %+v", snap.Status)
	}

	if err := e.k8s.Delete(e.ctx, source); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		_, err := osClient.GetIndex(t.Context(), source.Spec.IndexName)
		return err != nil, "the source index is still there"
	})

	restored := luceneIndex(e, "restored")
	restored.Spec.Shards = 2
	restored.Spec.RestoreFrom = &v1alpha1.RestoreSource{SnapshotRef: &v1alpha1.LocalObjectReference{Name: snap.Name}}
	start := time.Now()
	e.create(restored)
	e.waitIndexReady(restored)
	e.eventually(60*time.Second, func() (bool, string) {
		st, err := osClient.Stats(t.Context(), restored.Spec.IndexName)
		return err == nil && st.Health == "green" && st.DocsCount == int64(base.Len()), fmt.Sprintf("restored index: %+v %v", st, err)
	})
	restoreTook := time.Since(start)
	t.Logf("restore of %d bytes ready in %s (%.1f MB/s, including the operator's reconcile)", snap.Status.SizeBytes, restoreTook, float64(snap.Status.SizeBytes)/1e6/restoreTook.Seconds())
	after, err := bench.SearchIDs(t.Context(), osClient, restored.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	for q := range before {
		if fmt.Sprint(before[q]) != fmt.Sprint(after[q]) {
			t.Fatalf("query %d: top-10 before %v, after restore %v", q, before[q], after[q])
		}
	}
	e.waitEvent(restored.Name, "Restored")
	if idx := liveIndex(t, osClient, restored.Spec.IndexName); !strings.Contains(fmt.Sprint(idx.Meta), string(restored.UID)) {
		t.Errorf("restored index not owned by its VectorIndex: _meta %v", idx.Meta)
	}

	// Retention: a frequent policy keeps exactly maxCount of its own snapshots; a snapshot
	// it did not make (a VectorSnapshot taken by hand) is never touched.
	manual := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "by-hand", Namespace: e.ns},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "s3-backups", Indices: []string{restored.Name}}}
	e.create(manual)
	e.update(policy, func() { policy.Spec.Suspend = true })
	frequent := &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "frequent", Namespace: e.ns},
		Spec: v1alpha1.SnapshotPolicySpec{
			ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"},
			Repository: v1alpha1.SnapshotRepository{Name: "s3-backups", S3: &v1alpha1.S3Repository{Bucket: "vectors-snapshots", BasePath: e.ns, Client: "default"}},
			Schedule:   "@every 3s",
			Retention:  v1alpha1.SnapshotRetention{MaxCount: ptrInt32(2)},
		},
	}
	e.create(frequent)
	var taken map[string]bool
	e.eventually(120*time.Second, func() (bool, string) {
		var list v1alpha1.VectorSnapshotList
		if err := e.k8s.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{controllers.PolicyLabel: "frequent"}); err != nil {
			return false, err.Error()
		}
		if taken == nil {
			taken = map[string]bool{}
		}
		succeeded := 0
		for _, s := range list.Items {
			taken[s.Name] = true
			if s.Status.Phase == v1alpha1.SnapshotSucceeded && s.DeletionTimestamp.IsZero() {
				succeeded++
			}
		}
		return len(taken) >= 5 && succeeded == 2 && len(list.Items) <= 3, fmt.Sprintf("%d taken so far, %d present, %d succeeded", len(taken), len(list.Items), succeeded)
	})
	e.update(frequent, func() { frequent.Spec.Suspend = true })
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(manual), manual); err != nil || manual.Status.Phase != v1alpha1.SnapshotSucceeded {
		t.Errorf("the hand-made snapshot was touched: %v %+v", err, manual.Status)
	}
	if _, err := osClient.GetSnapshot(t.Context(), "s3-backups", manual.Status.SnapshotName); err != nil {
		t.Errorf("the hand-made snapshot is gone from the repository: %v", err)
	}

	// deletionPolicy Snapshot: the index goes only after its final snapshot succeeded.
	e.update(restored, func() {
		restored.Spec.DeletionPolicy = v1alpha1.DeletionPolicySnapshot
		restored.Spec.SnapshotRepository = "s3-backups"
	})
	e.waitIndexReady(restored)
	if err := e.k8s.Delete(e.ctx, restored); err != nil {
		t.Fatal(err)
	}
	e.eventually(60*time.Second, func() (bool, string) {
		_, err := osClient.GetIndex(t.Context(), restored.Spec.IndexName)
		return err != nil, "index still present"
	})
	final := fmt.Sprintf("%s-final-%s", restored.Spec.IndexName, strings.ReplaceAll(string(restored.UID), "-", "")[:8])
	if info, err := osClient.GetSnapshot(t.Context(), "s3-backups", final); err != nil || info.State != "SUCCESS" || len(info.Indices) != 1 {
		t.Errorf("final snapshot %s: %+v %v", final, info, err)
	}
}

func ptrInt32(v int32) *int32 { return &v }

// s3Proxy forwards TCP to the S3 server and can cut the line, as a network outage would,
// without losing the server's data.
type s3Proxy struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	down     bool
	conns    []net.Conn
}

func startProxy(t *testing.T, target string) *s3Proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Proxy{listener: l, target: target}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.down {
				p.mu.Unlock()
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				in.Close()
				continue
			}
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *s3Proxy) url() string { return "http://" + p.listener.Addr().String() }

func (p *s3Proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *s3Proxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestS3OutageMidSnapshot: a throttled snapshot that runs longer than the stall timeout
// but keeps moving succeeds (a snapshot is judged by its progress, not its age); then the
// line to S3 is cut while another is being written. OpenSearch keeps such a snapshot
// IN_PROGRESS for minutes (measured: still running 3m20s after the cut), but its state is
// read from the repository, which cannot be reached: the VectorSnapshot says its state is
// unknown (SnapshotStateUnknown) and is never aborted on that ground; once S3 is back it
// ends as the repository says, and the policy's next scheduled snapshot succeeds.
func TestS3OutageMidSnapshot(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	root := testsupport.Root(t)
	s3, err := devenv.StartS3(root, "ctl-s3-outage")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	req, _ := http.NewRequest(http.MethodPut, s3.URL+"/outage", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("creating bucket: %v %v", err, resp)
	}
	proxy := startProxy(t, strings.TrimPrefix(s3.URL, "http://"))
	node, err := devenv.StartNode(root, "ctl-s3-outage", devenv.NodeOptions{
		ExtraConfig: devenv.S3ClientConfig(proxy.url()) + "s3.client.default.max_retries: 0\n",
		Keystore:    map[string]string{"s3.client.default.access_key": "k", "s3.client.default.secret_key": "s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	osClient := osClient(t, node.URL)
	e.cluster("vectors", node.URL)
	vi := luceneIndex(e, "guarded")
	vi.Spec.Shards = 1
	e.create(vi)
	e.waitIndexReady(vi)
	base, _ := dataset.Generate(dataset.Spec{Count: 10000, Queries: 1, Dim: 32, Seed: 4})
	ingest(t, osClient, vi.Spec.IndexName, base)
	// Throttled to ~150 KB/s so the ~1.6 MB snapshot is still being written when the line is cut.
	if err := osClient.PutRepository(t.Context(), "slow", "s3", map[string]any{"bucket": "outage", "client": "default", "max_snapshot_bytes_per_sec": "150kb"}); err != nil {
		t.Fatal(err)
	}

	// Healthy but slow: four shards of small files at 40 KB/s take longer than the stall
	// timeout in all, and every file finishes well within it.
	large := luceneIndex(e, "large")
	large.Spec.Shards = 4
	e.create(large)
	e.waitIndexReady(large)
	many, _ := dataset.Generate(dataset.Spec{Count: 8000, Queries: 1, Dim: 32, Seed: 8})
	ingest(t, osClient, large.Spec.IndexName, many)
	if err := osClient.PutRepository(t.Context(), "slower", "s3", map[string]any{"bucket": "outage", "base_path": "slower", "client": "default", "max_snapshot_bytes_per_sec": "40kb"}); err != nil {
		t.Fatal(err)
	}
	patient := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "patient", Namespace: e.ns},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "slower", Indices: []string{large.Name}}}
	e.create(patient)
	e.waitCondition(patient, func() []metav1.Condition { return patient.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "SnapshotSucceeded", 180*time.Second)
	took := time.Duration(patient.Status.DurationMillis) * time.Millisecond
	t.Logf("slow healthy snapshot: %d bytes in %s, stall timeout %s", patient.Status.SizeBytes, took, fastOptions.SnapshotStallTimeout)
	if took <= fastOptions.SnapshotStallTimeout {
		t.Fatalf("the slow snapshot took %s, not longer than the stall timeout %s: it proves nothing", took, fastOptions.SnapshotStallTimeout)
	}
	first := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "cut-short", Namespace: e.ns},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "slow", Indices: []string{vi.Name}}}
	e.create(first)
	e.eventually(30*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(first), first)
		return first.Status.Phase == v1alpha1.SnapshotInProgress, "phase " + first.Status.Phase
	})
	proxy.cut()
	// Its state is read from the repository, which cannot be reached: unknown, reported
	// and retried, never a reason to abort or delete it.
	e.waitCondition(first, func() []metav1.Condition { return first.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSnapshotStateUnknown, 90*time.Second)
	t.Logf("snapshot cut short: %s", conditionMessageOf(first.Status.Conditions, v1alpha1.ConditionDegraded))
	if first.Status.Phase != v1alpha1.SnapshotInProgress {
		t.Errorf("a snapshot whose state cannot be read must stay InProgress (unknown), not be judged: %+v", first.Status)
	}

	proxy.restore()
	// Readable again: it ends as the repository says.
	e.eventually(120*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(first), first)
		return first.Status.Phase == v1alpha1.SnapshotSucceeded || first.Status.Phase == v1alpha1.SnapshotFailed, "phase " + first.Status.Phase
	})
	t.Logf("after the outage: %s %v", first.Status.Phase, first.Status.Failures)
	policy := &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "after-outage", Namespace: e.ns},
		Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Schedule: "@every 5s",
			Repository: v1alpha1.SnapshotRepository{Name: "slow", S3: &v1alpha1.S3Repository{Bucket: "outage", Client: "default"}},
			Retention:  v1alpha1.SnapshotRetention{MaxCount: ptrInt32(5)}},
	}
	e.create(policy)
	e.eventually(120*time.Second, func() (bool, string) {
		var list v1alpha1.VectorSnapshotList
		if err := e.k8s.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{controllers.PolicyLabel: policy.Name}); err != nil {
			return false, err.Error()
		}
		var phases []string
		for _, s := range list.Items {
			if s.Status.Phase == v1alpha1.SnapshotSucceeded {
				return true, ""
			}
			phases = append(phases, s.Status.Phase)
		}
		return false, fmt.Sprintf("policy snapshots: %v", phases)
	})
	e.update(policy, func() { policy.Spec.Suspend = true })
}
