package controllers_test

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// remoteStoreNodeConfig makes a node remote-backed with the settings the operator renders
// for a managed cluster's pools (managed.RemoteStoreSettings): segments and translog in one
// S3 repository, the cluster state in another, declared as node attributes at start.
func remoteStoreNodeConfig(t *testing.T, bucket string) string {
	t.Helper()
	yml, err := yaml.Marshal(managed.RemoteStoreSettings(&v1alpha1.ManagedRemoteStore{
		Repository:   v1alpha1.S3Repository{Bucket: bucket, BasePath: "data", Client: "default"},
		ClusterState: &v1alpha1.S3Repository{Bucket: bucket, BasePath: "state", Client: "default"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return string(yml)
}

// TestRemoteBackedIndexSurvivesLosingItsNode: on a remote-backed node a VectorIndex gets
// the remote store and segment replication by itself, and its upload lag is in status.
// 20,000 vectors and then 100 documents that were acknowledged but never refreshed are
// written; the node is killed with SIGKILL, its data folder wiped, and started again: the
// operator finds the index red, restores its lost primaries from the remote store, and
// every document and the top 10 of 50 fixed queries are back.
func TestRemoteBackedIndexSurvivesLosingItsNode(t *testing.T) {
	e := startOperator(t)
	const name = "ctl-remote-backed"
	root := testsupport.Root(t)
	s3, err := devenv.StartS3(root, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	createBucket(t, s3.URL, "remote-backed")
	opts := devenv.NodeOptions{
		ExtraConfig: devenv.S3ClientConfig(s3.URL) + remoteStoreNodeConfig(t, "remote-backed"),
		Keystore:    map[string]string{"s3.client.default.access_key": "k", "s3.client.default.secret_key": "s"},
	}
	node, err := devenv.StartNode(root, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	oc := osClient(t, node.URL)
	sc := e.cluster("vectors", node.URL)
	e.waitCondition(sc, func() []metav1.Condition { return sc.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "", 60*time.Second)
	if sc.Status.RemoteStore == nil || sc.Status.RemoteStore.SegmentRepository != "remote-data" || sc.Status.RemoteStore.StateRepository != "remote-state" {
		t.Errorf("status.remoteStore %+v, want the node's repositories", sc.Status.RemoteStore)
	}

	durable := luceneIndex(e, "durable")
	e.create(durable)
	e.waitIndexReady(durable)
	live := liveIndex(t, oc, durable.Spec.IndexName)
	if durable.Status.Storage != v1alpha1.StorageRemoteStore || live.Settings["index.replication.type"] != "SEGMENT" {
		t.Fatalf("status.storage %q, index.replication.type %q; want %s, SEGMENT", durable.Status.Storage, live.Settings["index.replication.type"], v1alpha1.StorageRemoteStore)
	}
	base, queries := dataset.Generate(dataset.Spec{Count: 20000, Queries: 50, Dim: 32, Seed: 5})
	ingest(t, oc, durable.Spec.IndexName, base)
	want, err := bench.SearchIDs(t.Context(), oc, durable.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Acknowledged, never refreshed: only the translog, uploaded before the acknowledgement,
	// holds them. Text only, so the k-NN results stay comparable.
	var unrefreshed strings.Builder
	for i := range 100 {
		fmt.Fprintf(&unrefreshed, `{"index":{"_index":%q,"_id":"%d"}}`+"\n"+`{"title":"late %d"}`+"\n", durable.Spec.IndexName, base.Len()+i, i)
	}
	if err := oc.Bulk(t.Context(), []byte(unrefreshed.String())); err != nil {
		t.Fatal(err)
	}
	wantCount := int64(base.Len() + 100)
	e.eventually(60*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, clientKey(durable), durable)
		return durable.Status.RemoteStore != nil, "no status.remoteStore yet"
	})
	t.Logf("remote store lag in status before the loss: %+v", *durable.Status.RemoteStore)

	compareSnapshots(e, oc, s3.URL, "remote-backed", durable)

	pid, err := strconv.Atoi(node.PID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(100 * time.Millisecond)
	}
	dataDir := filepath.Join(root, "bin", "run", "opensearch-"+name, "data")
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		if err := os.RemoveAll(filepath.Join(dataDir, entry.Name())); err != nil {
			t.Fatal(err)
		}
	}
	opts.AnyHealth = true
	started := time.Now()
	if node, err = devenv.StartNode(root, name, opts); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(durable.Name, v1alpha1.ReasonRestoredFromRemoteStore)
	e.eventually(3*time.Minute, func() (bool, string) {
		stats, err := oc.Stats(t.Context(), durable.Spec.IndexName)
		return err == nil && stats.DocsCount == wantCount, fmt.Sprintf("documents %d, health %s (%v), want %d", stats.DocsCount, stats.Health, err, wantCount)
	})
	took := time.Since(started)
	differ := differingTopTens(t, oc, durable.Spec.IndexName, queries, want)
	t.Logf("data folder wiped: %d documents back (of %d, 100 never refreshed) %s after the node started again; %d of %d top-10s differ",
		wantCount, wantCount, took.Round(time.Second), differ, len(want))
	if differ > 0 {
		t.Errorf("%d of %d top-10s differ after the restore from the remote store", differ, len(want))
	}
	e.waitIndexReady(durable)
}

// compareSnapshots takes a full and a shallow snapshot of the same remote-backed index,
// through VectorSnapshots, into two repositories of the bucket, and logs each one's time
// and the bytes the bucket grew by.
func compareSnapshots(e *env, oc *opensearch.Client, s3URL, bucket string, vi *v1alpha1.VectorIndex) {
	t := e.t
	t.Helper()
	for _, shallow := range []bool{false, true} {
		repo := "full"
		settings := map[string]any{"bucket": bucket, "base_path": "snapshots-full"}
		if shallow {
			repo = "shallow"
			settings = map[string]any{"bucket": bucket, "base_path": "snapshots-shallow", "remote_store_index_shallow_copy": true}
		}
		if err := oc.PutRepository(t.Context(), repo, "s3", settings); err != nil {
			t.Fatal(err)
		}
		// The whole bucket: a repository may lay its shard blobs out under hashed prefixes
		// outside its base path (shard_path_type).
		before := bucketBytes(t, s3URL, bucket, "")
		vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: repo, Namespace: e.ns},
			Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: repo, Indices: []string{vi.Name}}}
		e.create(vs)
		e.waitCondition(vs, func() []metav1.Condition { return vs.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "SnapshotSucceeded", 120*time.Second)
		wantKind := v1alpha1.SnapshotFull
		if shallow {
			wantKind = v1alpha1.SnapshotShallow
		}
		if vs.Status.Kind != wantKind {
			t.Errorf("snapshot in repository %s: status.kind %q, want %s", repo, vs.Status.Kind, wantKind)
		}
		written := bucketBytes(t, s3URL, bucket, "") - before
		t.Logf("%-7s snapshot of %s: %d ms, %d bytes added to the bucket (status.sizeBytes %d)", vs.Status.Kind, vi.Spec.IndexName, vs.Status.DurationMillis, written, vs.Status.SizeBytes)
	}
}

// bucketBytes is the size of every object under prefix in the bucket (ListObjectsV2).
func bucketBytes(t *testing.T, s3URL, bucket, prefix string) int64 {
	t.Helper()
	var total int64
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := http.Get(s3URL + "/" + bucket + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Contents []struct {
				Size int64 `xml:"Size"`
			} `xml:"Contents"`
			IsTruncated           bool   `xml:"IsTruncated"`
			NextContinuationToken string `xml:"NextContinuationToken"`
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("listing %s/%s: %v", bucket, prefix, err)
		}
		for _, c := range page.Contents {
			total += c.Size
		}
		if !page.IsTruncated {
			return total
		}
		token = page.NextContinuationToken
	}
}
