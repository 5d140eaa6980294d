package controllers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/bench"
	"github.com/vectorpilot/vectorpilot/internal/dataset"
	"github.com/vectorpilot/vectorpilot/internal/devenv"
	"github.com/vectorpilot/vectorpilot/internal/testsupport"
)

// TestSnapshotToS3DeleteAndRestore: 10,000 vectors, a SnapshotPolicy's scheduled snapshot to a
// real S3-compatible server, the index deleted with its VectorIndex, then restored through a
// new VectorIndex: the same document count and the same top-10 for 50 fixed queries.
func TestSnapshotToS3DeleteAndRestore(t *testing.T) {
	e := startOperator(t)
	root := testsupport.Root(t)
	s3, err := devenv.StartS3(root, "ctl-snapshot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	for _, bucket := range []string{"vectors-snapshots"} {
		req, _ := http.NewRequest(http.MethodPut, s3.URL+"/"+bucket, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("creating bucket %s: %v %v", bucket, err, resp)
		}
		resp.Body.Close()
	}
	node, err := devenv.StartNode(root, "ctl-snapshot", devenv.NodeOptions{
		ExtraConfig: devenv.S3ClientConfig(s3.URL),
		Keystore:    map[string]string{"s3.client.default.access_key": "test-key", "s3.client.default.secret_key": "test-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	os := osClient(t, node.URL)
	e.cluster("vectors", node.URL)

	source := luceneIndex(e, "source")
	source.Spec.Shards = 2
	source.Labels = map[string]string{"backup": "nightly"}
	e.create(source)
	e.waitIndexReady(source)
	base, queries := dataset.Generate(dataset.Spec{Count: 10000, Queries: 50, Dim: 32, Seed: 99})
	if err := bench.Ingest(t.Context(), os, source.Spec.IndexName, "embedding", base, 1000, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Refresh(t.Context(), source.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	before, err := bench.SearchIDs(t.Context(), os, source.Spec.IndexName, "embedding", queries, 10)
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
		_, err := os.GetIndex(t.Context(), source.Spec.IndexName)
		return err != nil, "the source index is still there"
	})

	restored := luceneIndex(e, "restored")
	restored.Spec.Shards = 2
	restored.Spec.RestoreFrom = &v1alpha1.RestoreSource{SnapshotRef: &v1alpha1.LocalObjectReference{Name: snap.Name}}
	start := time.Now()
	e.create(restored)
	e.waitIndexReady(restored)
	e.eventually(60*time.Second, func() (bool, string) {
		st, err := os.Stats(t.Context(), restored.Spec.IndexName)
		return err == nil && st.Health == "green" && st.DocsCount == int64(base.Len()), fmt.Sprintf("restored index: %+v %v", st, err)
	})
	restoreTook := time.Since(start)
	t.Logf("restore of %d bytes ready in %s (%.1f MB/s, including the operator's reconcile)", snap.Status.SizeBytes, restoreTook, float64(snap.Status.SizeBytes)/1e6/restoreTook.Seconds())
	after, err := bench.SearchIDs(t.Context(), os, restored.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	for q := range before {
		if fmt.Sprint(before[q]) != fmt.Sprint(after[q]) {
			t.Fatalf("query %d: top-10 before %v, after restore %v", q, before[q], after[q])
		}
	}
	e.waitEvent(restored.Name, "Restored")
	if idx := liveIndex(t, os, restored.Spec.IndexName); !strings.Contains(fmt.Sprint(idx.Meta), string(restored.UID)) {
		t.Errorf("restored index not owned by its VectorIndex: _meta %v", idx.Meta)
	}
}

func ptrInt32(v int32) *int32 { return &v }
