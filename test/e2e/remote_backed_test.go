package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// remoteBackedManagedCluster: a managed cluster of one cluster_manager+data+warm node is remote-backed on an S3 server the pods reach (bound to
// the host end of the node's link), its S3 credentials delivered from a Secret through the
// keystore init container: the node starts with the remote store attributes, a VectorIndex
// gets the remote store by itself and its segments land in the bucket; a snapshot of it,
// restored by a second VectorIndex as a RemoteSnapshot, is served by the warm node with
// the same top 10 for 50 queries. The indexes are faiss HNSW, the default engine: the pod's
// k-NN native libraries (built from source, in the image) build the graphs, and the warm
// node reads them through the file cache from the snapshot, not from a local directory.
func remoteBackedManagedCluster(t *testing.T) {
	ctx := context.Background()
	s3, err := devenv.StartS3At(testsupport.Root(t), "e2e-remote-backed", cluster.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	testsupport.Send(t, http.MethodPut, s3.URL+"/vectors-remote", "")
	ensureSearchNamespace(t)
	credentials := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: searchNamespace,
		Annotations: map[string]string{connect.ConsentAnnotation: "remote"}},
		StringData: map[string]string{"s3.client.default.access_key": "e2e", "s3.client.default.secret_key": "e2e-secret"}}
	if err := k8s.Create(ctx, credentials); err != nil {
		t.Fatal(err)
	}
	sc := &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: searchNamespace}, Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{
		Version:  "3.6.0",
		Keystore: []v1alpha1.KeystoreSecret{{SecretName: credentials.Name}},
		RemoteStore: &v1alpha1.ManagedRemoteStore{
			Repository:   v1alpha1.S3Repository{Bucket: "vectors-remote", BasePath: "remote/data", Client: "default"},
			ClusterState: &v1alpha1.S3Repository{Bucket: "vectors-remote", BasePath: "remote/state", Client: "default"},
		},
		NodePools: []v1alpha1.NodePool{{
			Name: "nodes", Roles: []v1alpha1.NodeRole{"cluster_manager", "data", "ingest", "warm"}, Replicas: 1,
			FileCacheSize: ptr.To(resource.MustParse("256Mi")),
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Storage: &v1alpha1.PoolStorage{Size: resource.MustParse("1Gi")},
			AdditionalConfig: map[string]string{
				"s3.client.default.endpoint": strings.TrimPrefix(s3.URL, "http://"), "s3.client.default.protocol": "http",
				"s3.client.default.path_style_access": "true", "s3.client.default.region": "us-east-1",
			},
		}},
	}}}
	box.RunHere(sc)
	applied := time.Now()
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	waitReady(t, sc, func() []metav1.Condition { return sc.Status.Conditions }, 8*time.Minute)
	t.Logf("remote-backed SearchCluster Ready %s after it was created", time.Since(applied).Round(time.Second))
	waitFor(t, time.Minute, "status to name the remote store and the file cache", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err.Error()
		}
		rs, fc := sc.Status.RemoteStore, sc.Status.FileCache
		return rs != nil && rs.SegmentRepository == "remote-data" && rs.StateRepository == "remote-state" && fc != nil && fc.TotalBytes == 256<<20,
			fmt.Sprintf("status.remoteStore %+v, status.fileCache %+v", rs, fc)
	})
	base := clientServiceURL(t, sc)
	oc, err := opensearch.New(opensearch.Config{Endpoint: base})
	if err != nil {
		t.Fatal(err)
	}

	before := objects(t, s3.URL, "vectors-remote", "")
	durable := remoteIndex("durable", sc.Name)
	if err := k8s.Create(ctx, durable); err != nil {
		t.Fatal(err)
	}
	waitReady(t, durable, func() []metav1.Condition { return durable.Status.Conditions }, 3*time.Minute)
	base5k, queries := dataset.Generate(dataset.Spec{Count: 5000, Queries: 50, Dim: 16, Seed: 19})
	if err := bench.Ingest(ctx, oc, durable.Spec.IndexName, "embedding", base5k, 1000, nil); err != nil {
		t.Fatal(err)
	}
	if err := oc.Refresh(ctx, durable.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	want, err := bench.SearchIDs(ctx, oc, durable.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	recall := dataset.Recall(dataset.ExactKNN(base5k, queries, 10), want)
	t.Logf("faiss index %s on the pod: recall@10 %.3f against brute force", durable.Spec.IndexName, recall)
	if recall < 0.95 {
		t.Errorf("recall@10 %.3f on the remote-backed faiss index, want >= 0.95", recall)
	}
	// The pool's status names the faiss library the node loaded, read from its log: the
	// variant its simd level and this machine's CPU select.
	waitFor(t, 2*time.Minute, "status.pools[0].faissLibrary", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err.Error()
		}
		p := sc.Status.Pools[0]
		return p.SIMD != "" && p.FaissLibrary == simd.FaissVariant(p.SIMD), fmt.Sprintf("pool %s: simd %q, faissLibrary %q", p.Name, p.SIMD, p.FaissLibrary)
	})
	if c := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("cluster Degraded after the faiss library loaded: %s: %s", c.Reason, c.Message)
	}
	t.Logf("pool %s: simd %s, faissLibrary %s (from the pod's log)", sc.Status.Pools[0].Name, sc.Status.Pools[0].SIMD, sc.Status.Pools[0].FaissLibrary)
	waitFor(t, time.Minute, "the index's remote store in status", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(durable), durable); err != nil {
			return false, err.Error()
		}
		return durable.Status.Storage == v1alpha1.StorageRemoteStore && durable.Status.RemoteStore != nil && durable.Status.DocsCount == int64(base5k.Len()),
			fmt.Sprintf("storage %q, remoteStore %+v, docs %d", durable.Status.Storage, durable.Status.RemoteStore, durable.Status.DocsCount)
	})
	// The whole bucket: the remote store lays segment and translog files out under hashed
	// prefixes, not under the repository's base path.
	after := objects(t, s3.URL, "vectors-remote", "")
	t.Logf("index %s: status.remoteStore %+v; bucket objects %d before the index, %d after 5,000 documents", durable.Spec.IndexName, *durable.Status.RemoteStore, before, after)
	if after <= before || durable.Status.RemoteStore.FailedUploads != 0 {
		t.Errorf("bucket objects %d → %d, %d failed uploads: the pod did not reach S3 with its keystore credentials", before, after, durable.Status.RemoteStore.FailedUploads)
	}

	if err := oc.PutRepository(ctx, "snapshots", "s3", map[string]any{"bucket": "vectors-remote", "base_path": "snapshots"}); err != nil {
		t.Fatal(err)
	}
	snap := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "durable", Namespace: searchNamespace},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: sc.Name}, Repository: "snapshots", Indices: []string{durable.Name}}}
	if err := k8s.Create(ctx, snap); err != nil {
		t.Fatal(err)
	}
	waitReady(t, snap, func() []metav1.Condition { return snap.Status.Conditions }, 3*time.Minute)
	served := remoteIndex("served", sc.Name)
	served.Spec.RestoreFrom = &v1alpha1.RestoreSource{SnapshotRef: &v1alpha1.LocalObjectReference{Name: snap.Name}, Index: durable.Spec.IndexName, Storage: v1alpha1.StorageRemoteSnapshot}
	if err := k8s.Create(ctx, served); err != nil {
		t.Fatal(err)
	}
	waitReady(t, served, func() []metav1.Condition { return served.Status.Conditions }, 3*time.Minute)
	got, err := bench.SearchIDs(ctx, oc, served.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	differ := bench.Differing(got, want)
	t.Logf("searchable snapshot %s served by the warm node: status.storage %s, %d of %d top-10s differ from the remote-backed index",
		served.Spec.IndexName, served.Status.Storage, differ, len(want))
	if served.Status.Storage != v1alpha1.StorageRemoteSnapshot || differ > 0 {
		t.Errorf("status.storage %q, %d top-10s differ", served.Status.Storage, differ)
	}
}

// remoteIndex is a one-shard faiss HNSW VectorIndex of 16 dimensions on cluster.
func remoteIndex(name, cluster string) *v1alpha1.VectorIndex {
	return &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: searchNamespace}, Spec: v1alpha1.VectorIndexSpec{
		ClusterRef: v1alpha1.LocalObjectReference{Name: cluster}, IndexName: name, Shards: 1, Replicas: 0, RefreshInterval: "1s",
		Fields: []v1alpha1.VectorField{{Name: "embedding", Dimension: 16, DataType: "float", SpaceType: "l2", Engine: "faiss",
			Mode: "in_memory", CompressionLevel: "1x", Method: v1alpha1.VectorMethod{Name: "hnsw"}}},
		Search:         v1alpha1.SearchSettings{ConcurrentSegmentSearch: v1alpha1.ConcurrentSegmentSearch{Mode: "auto"}},
		DeletionPolicy: v1alpha1.DeletionPolicyDelete,
	}}
}

// objects counts the objects under prefix in the bucket, up to the 1,000 of one listing.
func objects(t *testing.T, s3URL, bucket, prefix string) int {
	t.Helper()
	body := get(t, s3URL+"/"+bucket+"?list-type=2&prefix="+prefix)
	return strings.Count(body, "<Contents>")
}
