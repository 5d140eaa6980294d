package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// startS3Node starts a real S3 server with a bucket and a node whose default S3 client
// points at it, with extraConfig appended to its opensearch.yml; it returns the node's
// client and URL.
func startS3Node(t *testing.T, name, bucket, extraConfig string) (*opensearch.Client, string) {
	t.Helper()
	root := testsupport.Root(t)
	s3, err := devenv.StartS3(root, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	createBucket(t, s3.URL, bucket)
	node, err := devenv.StartNode(root, name, devenv.NodeOptions{
		ExtraConfig: devenv.S3ClientConfig(s3.URL) + extraConfig,
		Keystore:    map[string]string{"s3.client.default.access_key": "k", "s3.client.default.secret_key": "s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	return osClient(t, node.URL), node.URL
}

// createBucket creates a bucket on the S3 server.
func createBucket(t *testing.T, s3URL, bucket string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, s3URL+"/"+bucket, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("creating bucket %s: %s", bucket, resp.Status)
	}
}

// describeSnapshots says of each VectorSnapshot its phase and its conditions' reasons.
func describeSnapshots(list []v1alpha1.VectorSnapshot) string {
	var out []string
	for _, s := range list {
		var reasons []string
		for _, c := range s.Status.Conditions {
			reasons = append(reasons, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		out = append(out, fmt.Sprintf("%s (%s, %q) %v", s.Name, s.Status.Phase, s.Status.SnapshotName, reasons))
	}
	return strings.Join(out, "; ")
}

func (e *env) policySnapshots(policy string) []v1alpha1.VectorSnapshot {
	e.t.Helper()
	var list v1alpha1.VectorSnapshotList
	if err := e.k8s.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{controllers.PolicyLabel: policy}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// TestDeletingAPolicyKeepsEverySnapshot: a policy takes snapshots and prunes by retention;
// a hand-made VectorSnapshot carrying the policy's label is never pruned; deleting the
// policy (its VectorSnapshots garbage-collected by the real controller-manager) leaves
// every snapshot it kept in the repository, and one of them restores with the same top-10
// for 50 fixed queries. Only a VectorSnapshot whose deletionPolicy is Delete takes its
// snapshot with it.
func TestDeletingAPolicyKeepsEverySnapshot(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	osClient, url := startS3Node(t, "ctl-keep-backups", "kept", "")
	e.cluster("vectors", url)
	source := luceneIndex(e, "source")
	source.Spec.Shards = 1
	e.create(source)
	e.waitIndexReady(source)
	base, queries := dataset.Generate(dataset.Spec{Count: 2000, Queries: 50, Dim: 32, Seed: 11})
	ingest(t, osClient, source.Spec.IndexName, base)
	before, err := bench.SearchIDs(t.Context(), osClient, source.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	repo := v1alpha1.SnapshotRepository{Name: "kept", S3: &v1alpha1.S3Repository{Bucket: "kept", BasePath: e.ns, Client: "default"}}
	policy := &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "frequent", Namespace: e.ns},
		Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: repo,
			Schedule: "@every 3s", Retention: v1alpha1.SnapshotRetention{MaxCount: ptrInt32(3)}},
	}
	e.create(policy)
	// A snapshot made by hand that carries the policy's label, older than all the policy's.
	spoof := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "by-hand", Namespace: e.ns, Labels: map[string]string{controllers.PolicyLabel: policy.Name}},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: repo.Name, Indices: []string{source.Name}}}
	e.create(spoof)
	seen := map[string]string{} // object name → snapshot name, of every snapshot the policy took
	e.eventually(150*time.Second, func() (bool, string) {
		succeeded := 0
		for _, s := range e.policySnapshots(policy.Name) {
			if !metav1.IsControlledBy(&s, policy) {
				continue
			}
			if s.Status.Phase == v1alpha1.SnapshotSucceeded && s.DeletionTimestamp.IsZero() {
				succeeded++
			}
			if s.Status.SnapshotName != "" {
				seen[s.Name] = s.Status.SnapshotName
			}
		}
		_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(policy), policy)
		return succeeded == 3 && len(seen) >= 5, fmt.Sprintf("%d succeeded, %d taken so far; policy %+v; snapshots %s",
			succeeded, len(seen), policy.Status.Conditions, describeSnapshots(e.policySnapshots(policy.Name)))
	})
	e.update(policy, func() { policy.Spec.Suspend = true })
	// Suspended: the last snapshots finish and retention settles on maxCount.
	e.eventually(60*time.Second, func() (bool, string) {
		succeeded := 0
		for _, s := range e.policySnapshots(policy.Name) {
			if s.Status.Phase != v1alpha1.SnapshotSucceeded && s.Status.Phase != v1alpha1.SnapshotFailed {
				return false, s.Name + " still " + s.Status.Phase
			}
			if !s.DeletionTimestamp.IsZero() {
				return false, s.Name + " being pruned"
			}
			if s.Status.Phase == v1alpha1.SnapshotSucceeded && metav1.IsControlledBy(&s, policy) {
				succeeded++
			}
		}
		return succeeded == 3, fmt.Sprintf("%d succeeded", succeeded)
	})
	if err := e.k8s.Get(e.ctx, clientKey(spoof), spoof); err != nil || !spoof.DeletionTimestamp.IsZero() || spoof.Status.Phase != v1alpha1.SnapshotSucceeded {
		t.Fatalf("retention touched a snapshot the policy does not control: %v %+v", err, spoof.Status)
	}
	var kept []string
	for _, s := range e.policySnapshots(policy.Name) {
		if metav1.IsControlledBy(&s, policy) && s.Status.Phase == v1alpha1.SnapshotSucceeded {
			kept = append(kept, s.Status.SnapshotName)
		}
	}
	e.eventually(30*time.Second, func() (bool, string) {
		listed, err := osClient.SnapshotNames(t.Context(), repo.Name)
		if err != nil {
			return false, err.Error()
		}
		for obj, snap := range seen {
			if !slices.Contains(kept, snap) && slices.Contains(listed, snap) {
				return false, fmt.Sprintf("retention pruned %s but its snapshot %s is still in the repository", obj, snap)
			}
		}
		return true, ""
	})

	if err := e.k8s.Delete(e.ctx, policy); err != nil {
		t.Fatal(err)
	}
	// The garbage collector deletes the policy's VectorSnapshots; their finalizers run.
	e.eventually(60*time.Second, func() (bool, string) {
		for _, s := range e.policySnapshots(policy.Name) {
			if metav1.IsControlledBy(&s, policy) {
				return false, "VectorSnapshot " + s.Name + " of the deleted policy still present"
			}
		}
		return true, ""
	})
	listed, err := osClient.SnapshotNames(t.Context(), repo.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after deleting the policy, _snapshot/%s/_all lists %d snapshots: %v (the policy had kept %d: %v)", repo.Name, len(listed), listed, len(kept), kept)
	if len(kept) < 3 {
		t.Fatalf("the policy kept %d snapshots, want 3", len(kept))
	}
	for _, snap := range append(kept, spoof.Status.SnapshotName) {
		if !slices.Contains(listed, snap) {
			t.Errorf("snapshot %s is gone from the repository after its policy was deleted", snap)
		}
	}

	// One of them restores, by repository and snapshot name, with the same answers.
	restored := luceneIndex(e, "restored")
	restored.Spec.Shards = 1
	restored.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: repo.Name, Snapshot: kept[0], Index: source.Spec.IndexName}
	e.create(restored)
	e.waitIndexReady(restored)
	after, err := bench.SearchIDs(t.Context(), osClient, restored.Spec.IndexName, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	for q := range before {
		if fmt.Sprint(before[q]) != fmt.Sprint(after[q]) {
			t.Fatalf("query %d: top-10 before %v, after restore %v", q, before[q], after[q])
		}
	}

	// Deleting a VectorSnapshot keeps its backup unless it asks otherwise.
	if err := e.k8s.Delete(e.ctx, spoof); err != nil {
		t.Fatal(err)
	}
	doomed := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "doomed", Namespace: e.ns},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: repo.Name, Indices: []string{source.Name}}}
	e.create(doomed)
	e.waitCondition(doomed, func() []metav1.Condition { return doomed.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "SnapshotSucceeded", 60*time.Second)
	e.update(doomed, func() { doomed.Spec.DeletionPolicy = v1alpha1.SnapshotDeletionDelete })
	if err := e.k8s.Delete(e.ctx, doomed); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		names, err := osClient.SnapshotNames(t.Context(), repo.Name)
		return err == nil && !slices.Contains(names, doomed.Status.SnapshotName) && slices.Contains(names, spoof.Status.SnapshotName),
			fmt.Sprintf("repository lists %v (%v)", names, err)
	})
}

// TestPolicyTakesOneSnapshotPerSlotWhenItsStatusWriteFails: the policy created the slot's
// VectorSnapshot, then its status write failed; the retry a second later must find that
// snapshot, not take a second one.
func TestPolicyTakesOneSnapshotPerSlotWhenItsStatusWriteFails(t *testing.T) {
	// No operator runs: the test drives the policy's reconciler itself.
	cp := testsupport.ControlPlane(t)
	base, err := client.NewWithWatch(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("t%d-%s-slot", nsSeq.Add(1), runToken)
	e := &env{t: t, ctx: t.Context(), k8s: base, ns: ns}
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	e.cluster("vectors", testsupport.OpenSearchURL(t))
	e.create(luceneIndex(e, "nightly"))
	policy := &v1alpha1.SnapshotPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: e.ns},
		Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Schedule: "0 * * * *",
			Repository: v1alpha1.SnapshotRepository{Name: "unused", FS: &v1alpha1.FSRepository{Location: "unused"}}},
	}
	e.create(policy)
	// Registered already, so the reconcile goes straight to the schedule.
	policy.Status = v1alpha1.SnapshotPolicyStatus{ObservedGeneration: policy.Generation}
	meta.SetStatusCondition(&policy.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "registered", ObservedGeneration: policy.Generation})
	if err := e.k8s.Status().Update(e.ctx, policy); err != nil {
		t.Fatal(err)
	}
	failures := 1
	flaky := interceptor.NewClient(base, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*v1alpha1.SnapshotPolicy); ok && failures > 0 {
				failures--
				return apierrors.NewServiceUnavailable("status write lost")
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	// An hour after the policy was created: its first slot is due.
	now := policy.CreationTimestamp.Add(time.Hour + time.Minute)
	r := &controllers.SnapshotPolicyReconciler{Client: flaky, Resolver: &connect.Resolver{Reader: base}, Recorder: events.NewFakeRecorder(100),
		Options: fastOptions, Now: func() time.Time { return now }}
	req := ctrl.Request{NamespacedName: clientKey(policy)}
	if _, err := r.Reconcile(e.ctx, req); err == nil {
		t.Fatal("the first reconcile's status write should have failed")
	}
	now = now.Add(time.Second)
	if _, err := r.Reconcile(e.ctx, req); err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, s := range e.policySnapshots(policy.Name) {
		mine = append(mine, s.Name)
	}
	if len(mine) != 1 {
		t.Errorf("one scheduled slot, lost status write: %d VectorSnapshots %v, want 1", len(mine), mine)
	}
}

// TestRestoreChecksShardsAndResumesAfterAnInterruption: a snapshot whose index has another
// shard count is refused before anything is restored (no index, no polling); a restore
// interrupted after OpenSearch restored the index but before it was marked as the
// VectorIndex's is finished, not reported as someone else's index, even once OpenSearch
// has forgotten that the shards came from the snapshot.
func TestRestoreChecksShardsAndResumesAfterAnInterruption(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	repo := "fs-" + e.ns
	if err := osClient.PutRepository(t.Context(), repo, "fs", map[string]any{"location": e.ns}); err != nil {
		t.Fatal(err)
	}
	source := luceneIndex(e, "source")
	source.Spec.Shards = 2
	e.create(source)
	e.waitIndexReady(source)
	base, queries := dataset.Generate(dataset.Spec{Count: 500, Queries: 5, Dim: 32, Seed: 2})
	ingest(t, osClient, source.Spec.IndexName, base)
	if err := osClient.CreateSnapshot(t.Context(), repo, "two-shards", []string{source.Spec.IndexName}, nil); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		info, err := osClient.GetSnapshot(t.Context(), repo, "two-shards")
		return err == nil && info.State == "SUCCESS", fmt.Sprintf("%+v %v", info, err)
	})

	wrong := luceneIndex(e, "wrong-shards")
	wrong.Spec.Shards = 3
	wrong.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: repo, Snapshot: "two-shards", Index: source.Spec.IndexName}
	e.create(wrong)
	e.waitCondition(wrong, func() []metav1.Condition { return wrong.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonConflict, 30*time.Second)
	if msg := conditionMessage(wrong, v1alpha1.ConditionDegraded); !strings.Contains(msg, "2 shards") || !strings.Contains(msg, "nothing was restored") {
		t.Errorf("shard mismatch message %q", msg)
	}
	if _, err := osClient.GetIndex(t.Context(), wrong.Spec.IndexName); !opensearch.IsNotFound(err) {
		t.Errorf("an index with the wrong shard count was restored: %v", err)
	}

	// The interrupted restore: created while its cluster is unknown, so the operator cannot
	// act; then what the operator does before a crash is done by hand — record the restore
	// in status, restore — and the cluster appears.
	interrupted := luceneIndex(e, "interrupted")
	interrupted.Spec.ClusterRef.Name = "later"
	interrupted.Spec.RestoreFrom = &v1alpha1.RestoreSource{Repository: repo, Snapshot: "two-shards", Index: source.Spec.IndexName}
	e.create(interrupted)
	e.waitCondition(interrupted, func() []metav1.Condition { return interrupted.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonClusterNotFound, 30*time.Second)
	e.eventually(10*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(interrupted), interrupted); err != nil {
			return false, err.Error()
		}
		interrupted.Status.Restore = &v1alpha1.RestoreStatus{Repository: repo, Snapshot: "two-shards", Index: source.Spec.IndexName, StartedAt: metav1.Now()}
		err := e.k8s.Status().Update(e.ctx, interrupted)
		return err == nil, fmt.Sprint(err)
	})
	marker := map[string]any{indexspec.RestoreMarkerSetting: string(interrupted.UID)}
	if err := osClient.Restore(t.Context(), repo, "two-shards", source.Spec.IndexName, interrupted.Spec.IndexName, false, marker); err != nil {
		t.Fatal(err)
	}
	if owner := liveIndex(t, osClient, interrupted.Spec.IndexName).Meta[indexspec.MetaUID]; owner != string(source.UID) {
		t.Fatalf("the restored index carries owner %v, want the snapshot's (%s)", owner, source.UID)
	}
	// Its shards recover again (as after a node restart or a relocation): OpenSearch no
	// longer says they came from the snapshot.
	e.eventually(30*time.Second, func() (bool, string) {
		h := testsupport.Send(t, http.MethodGet, url+"/_cluster/health/"+interrupted.Spec.IndexName+"?wait_for_status=green&timeout=1s", "")
		return strings.Contains(h, `"status":"green"`), h
	})
	testsupport.Send(t, http.MethodPost, url+"/"+interrupted.Spec.IndexName+"/_close", "")
	testsupport.Send(t, http.MethodPost, url+"/"+interrupted.Spec.IndexName+"/_open?wait_for_active_shards=all", "")
	if repo, snap, err := osClient.RestoredFrom(t.Context(), interrupted.Spec.IndexName); err != nil || repo != "" || snap != "" {
		t.Fatalf("after a close and open, _recovery still names snapshot %s/%s (%v)", repo, snap, err)
	}
	e.cluster("later", url)
	e.waitIndexReady(interrupted)
	resumed := liveIndex(t, osClient, interrupted.Spec.IndexName)
	if owner := resumed.Meta[indexspec.MetaUID]; owner != string(interrupted.UID) {
		t.Errorf("after resuming, the index is owned by %v, want the VectorIndex %s", owner, interrupted.UID)
	}
	if m, ok := resumed.Settings[indexspec.RestoreMarkerSetting]; ok {
		t.Errorf("after resuming, the index still has %s=%s", indexspec.RestoreMarkerSetting, m)
	}
	got, err := bench.SearchIDs(t.Context(), osClient, interrupted.Spec.IndexName, "embedding", queries, 10)
	if err != nil || len(got[0]) != 10 {
		t.Errorf("restored index answers %v, %v", got, err)
	}
	for _, ev := range e.events(interrupted.Name) {
		if ev.Reason == "Conflict" {
			t.Errorf("the interrupted restore was reported as a conflict: %s", ev.Note)
		}
	}
}

// TestRedIndexIsDegradedAndRecovers: an index whose primaries cannot be assigned is
// Degraded/IndexRed (not Progressing forever), and Ready once they are.
func TestRedIndexIsDegradedAndRecovers(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "red")
	props, err := indexspec.Properties(&vi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	// Made outside the operator with its primaries pinned to a node that does not exist
	// (not waiting for shards that will never start).
	settings := indexspec.CreateSettings(&vi.Spec)
	settings["index.routing.allocation.require._name"] = "no-such-node"
	body, _ := json.Marshal(map[string]any{"settings": settings, "mappings": map[string]any{"properties": props}})
	req, _ := http.NewRequest(http.MethodPut, url+"/"+vi.Spec.IndexName+"?wait_for_active_shards=0", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("creating a red index: %v %v", err, resp)
	}
	resp.Body.Close()
	// The node is shared: a red index left behind would hold other tests' clusters red.
	t.Cleanup(func() { _ = osClient.DeleteIndex(context.Background(), vi.Spec.IndexName) })
	e.create(vi)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonIndexHealthRed, 30*time.Second)
	if p := meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionProgressing); p == nil || p.Status != metav1.ConditionFalse {
		t.Errorf("a red index must not be Progressing: %+v", p)
	}
	// The condition says why, in OpenSearch's words: the filter no node matches.
	if d := meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionDegraded); !strings.Contains(d.Message, "cannot be assigned") ||
		!strings.Contains(d.Message, `[filter]`) || !strings.Contains(d.Message, "no-such-node") {
		t.Errorf("Degraded says %q; want why the primaries cannot be assigned (the require filter naming no-such-node)", d.Message)
	} else {
		t.Logf("Degraded: %s", d.Message)
	}
	if err := osClient.PutSettings(t.Context(), vi.Spec.IndexName, map[string]any{"index.routing.allocation.require._name": nil}); err != nil {
		t.Fatal(err)
	}
	e.waitIndexReady(vi)
}

// foreignDocuments is every document of an index as OpenSearch returns it: id → _source
// bytes.
func foreignDocuments(t *testing.T, url, index string) map[string]string {
	t.Helper()
	resp, err := http.Get(url + "/" + index + "/_search?size=10000&q=_exists_:title")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Hits struct {
			Hits []struct {
				ID     string          `json:"_id"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	docs := map[string]string{}
	for _, h := range out.Hits.Hits {
		docs[h.ID] = string(h.Source)
	}
	return docs
}

// TestBenchmarkLeavesForeignDocumentsAndSettingsAsTheyWere: an index holding documents
// that are not a run's dataset is refused by a default run and left byte-identical; with
// load IntoNonEmpty the dataset goes in beside them, never over them; every setting a run
// changes is back as it was when it ends — succeeded, failed or deleted — even with the
// VectorIndex paused, so nothing else puts them back.
func TestBenchmarkLeavesForeignDocumentsAndSettingsAsTheyWere(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "production")
	vi.Spec.Shards = 1
	vi.Spec.Fields[0].SpaceType = "l2"
	e.create(vi)
	e.waitIndexReady(vi)
	// 300 documents of the user's, ids 0..299 as a benchmark would write them.
	var bulk strings.Builder
	foreign, _ := dataset.Generate(dataset.Spec{Count: 300, Queries: 1, Dim: 32, Seed: 77})
	for i := range foreign.Len() {
		fmt.Fprintf(&bulk, "{\"index\":{\"_index\":%q,\"_id\":\"%d\"}}\n", vi.Spec.IndexName, i)
		doc, _ := json.Marshal(map[string]any{"title": fmt.Sprintf("product %d", i), "embedding": foreign.At(i)})
		bulk.Write(doc)
		bulk.WriteByte('\n')
	}
	if err := osClient.Bulk(t.Context(), []byte(bulk.String())); err != nil {
		t.Fatal(err)
	}
	if err := osClient.Refresh(t.Context(), vi.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	want := foreignDocuments(t, url, vi.Spec.IndexName)
	if len(want) != 300 {
		t.Fatalf("%d foreign documents", len(want))
	}
	settingsBefore := liveIndex(t, osClient, vi.Spec.IndexName).Settings
	held := func() string {
		s := liveIndex(t, osClient, vi.Spec.IndexName).Settings
		return fmt.Sprintf("refresh=%s mode=%s slices=%s", s[bench.RefreshInterval], s[indexspec.SettingConcurrentMode], s[indexspec.SettingMaxSliceCount])
	}
	wantHeld := fmt.Sprintf("refresh=%s mode=%s slices=%s", settingsBefore[bench.RefreshInterval], settingsBefore[indexspec.SettingConcurrentMode], settingsBefore[indexspec.SettingMaxSliceCount])

	refused := localRun(e, "refused", vi.Name, time.Second)
	e.create(refused)
	e.waitRunPhase(refused, v1alpha1.BenchmarkFailed, 60*time.Second)
	if c := meta.FindStatusCondition(refused.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Reason != v1alpha1.ReasonIndexNotEmpty {
		t.Errorf("a run into an index with foreign documents: %+v, want Degraded/%s", c, v1alpha1.ReasonIndexNotEmpty)
	}
	if got := foreignDocuments(t, url, vi.Spec.IndexName); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("foreign documents changed by a refused run: %d now, %d before", len(got), len(want))
	}

	// Paused, the VectorIndex converges nothing: what is put back, the runs put back.
	e.update(vi, func() { vi.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"} })
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionPaused, metav1.ConditionTrue, v1alpha1.ReasonPaused, 30*time.Second)
	beside := localRun(e, "beside", vi.Name, time.Second)
	beside.Spec.Workload.Load = "IntoNonEmpty"
	e.create(beside)
	e.waitRunPhase(beside, v1alpha1.BenchmarkSucceeded, 120*time.Second)
	got := foreignDocuments(t, url, vi.Spec.IndexName)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("foreign documents changed by an IntoNonEmpty run: %d with a title now, %d before", len(got), len(want))
	}
	stats, err := osClient.Stats(t.Context(), vi.Spec.IndexName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after IntoNonEmpty: %d documents (300 foreign, %d of the dataset's 3000 whose ids were free), foreign _source byte-identical", stats.DocsCount, stats.DocsCount-300)
	e.eventually(30*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, clientKey(beside), beside)
		return held() == wantHeld && beside.Status.RestoreSettings == nil && len(beside.Finalizers) == 0, held() + " want " + wantHeld
	})

	// A run deleted while it measures puts the settings back too.
	cut := localRun(e, "cut", vi.Name, 20*time.Second)
	cut.Spec.Workload.Load = "Never"
	cut.Spec.SliceCounts = []int32{4}
	e.create(cut)
	e.waitRunPhase(cut, v1alpha1.BenchmarkRunning, 60*time.Second)
	e.eventually(30*time.Second, func() (bool, string) {
		return liveIndex(t, osClient, vi.Spec.IndexName).Settings[indexspec.SettingMaxSliceCount] == "4", held()
	})
	if err := e.k8s.Delete(e.ctx, cut); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, clientKey(cut), cut)
		return apierrors.IsNotFound(err) && held() == wantHeld, held() + " want " + wantHeld
	})
	if got := foreignDocuments(t, url, vi.Spec.IndexName); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("foreign documents changed")
	}
}

// TestLocalRunsAreBoundedAndFailAfterRepeatedInterruptions: a dataset over the operator's
// memory budget fails at once with DatasetTooLarge (admission bounds the count; only the
// index knows the dimension); a run that was started maxLocalAttempts times and never
// ended (the operator died each time) fails instead of starting again; a run on an index
// that is not Ready waits.
func TestLocalRunsAreBoundedAndFailAfterRepeatedInterruptions(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	e.cluster("vectors", url)
	wide := luceneIndex(e, "wide")
	wide.Spec.Fields[0].Dimension = 1024
	e.create(wide)
	e.waitIndexReady(wide)
	large := localRun(e, "large", wide.Name, time.Second)
	large.Spec.Workload.Dataset.Generated.Count = 200000
	e.create(large)
	e.waitRunPhase(large, v1alpha1.BenchmarkFailed, 30*time.Second)
	if c := meta.FindStatusCondition(large.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Reason != v1alpha1.ReasonDatasetTooLarge {
		t.Errorf("200000 × 1024 floats: %+v, want %s", c, v1alpha1.ReasonDatasetTooLarge)
	}

	// Created before its index exists, so the test can record three interrupted attempts.
	crashy := localRun(e, "crashy", "later", time.Second)
	e.create(crashy)
	e.waitRunPhase(crashy, v1alpha1.BenchmarkPending, 30*time.Second)
	e.eventually(10*time.Second, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(crashy), crashy); err != nil {
			return false, err.Error()
		}
		crashy.Status.Attempts, crashy.Status.Phase = 3, v1alpha1.BenchmarkRunning
		err := e.k8s.Status().Update(e.ctx, crashy)
		return err == nil, fmt.Sprint(err)
	})
	later := luceneIndex(e, "later")
	e.create(later)
	e.waitRunPhase(crashy, v1alpha1.BenchmarkFailed, 60*time.Second)
	if c := meta.FindStatusCondition(crashy.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Reason != v1alpha1.ReasonInterrupted {
		t.Errorf("a run interrupted 3 times: %+v, want %s", c, v1alpha1.ReasonInterrupted)
	}

	// An index in Conflict is not Ready: the run waits and never touches it.
	osClient := osClient(t, url)
	taken := luceneIndex(e, "taken")
	if err := osClient.CreateIndex(t.Context(), taken.Spec.IndexName, map[string]any{"index.number_of_shards": 1}, map[string]any{"other": map[string]any{"type": "keyword"}}, nil); err != nil {
		t.Fatal(err)
	}
	e.create(taken)
	e.waitCondition(taken, func() []metav1.Condition { return taken.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonConflict, 30*time.Second)
	waits := localRun(e, "waits", taken.Name, time.Second)
	e.create(waits)
	e.waitCondition(waits, func() []metav1.Condition { return waits.Status.Conditions }, v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonIndexNotReady, 30*time.Second)
	if st, err := osClient.Stats(t.Context(), taken.Spec.IndexName); err != nil || st.DocsCount != 0 {
		t.Errorf("the foreign index was written to: %+v %v", st, err)
	}
}

// TestPausedIndexWritesNothingAndLetsGoWithoutDeleting: paused, a spec change is not applied
// and deleting the object (deletionPolicy Delete) leaves the index — the way out of a
// finalizer that cannot finish.
func TestPausedIndexWritesNothingAndLetsGoWithoutDeleting(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "paused")
	e.create(vi)
	e.waitIndexReady(vi)
	e.update(vi, func() { vi.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"} })
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionPaused, metav1.ConditionTrue, v1alpha1.ReasonPaused, 30*time.Second)
	e.update(vi, func() { vi.Spec.RefreshInterval = "30s" })
	time.Sleep(3 * fastOptions.IndexResyncInterval)
	if got := liveIndex(t, osClient, vi.Spec.IndexName).Settings[bench.RefreshInterval]; got != "2s" {
		t.Errorf("paused, the index's refresh interval became %s", got)
	}
	if err := e.k8s.Delete(e.ctx, vi); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, clientKey(vi), vi)
		return apierrors.IsNotFound(err), fmt.Sprintf("paused VectorIndex still present: %v", err)
	})
	if _, err := osClient.GetIndex(t.Context(), vi.Spec.IndexName); err != nil {
		t.Errorf("deleting a paused VectorIndex with deletionPolicy Delete deleted its index: %v", err)
	}
}

// TestPausedSnapshotObjectsWriteNothing: a paused SnapshotPolicy registers no repository
// and takes no snapshot, whatever its schedule; a paused VectorSnapshot whose
// deletionPolicy is Delete is let go without its snapshot being deleted.
func TestPausedSnapshotObjectsWriteNothing(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "kept")
	e.create(vi)
	e.waitIndexReady(vi)
	paused := map[string]string{v1alpha1.PausedAnnotation: "true"}
	repo := "paused-" + e.ns
	policy := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Name: "paused", Namespace: e.ns, Annotations: paused},
		Spec: v1alpha1.SnapshotPolicySpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Schedule: "@every 2s",
			Repository: v1alpha1.SnapshotRepository{Name: repo, FS: &v1alpha1.FSRepository{Location: e.ns}}}}
	e.create(policy)
	e.waitCondition(policy, func() []metav1.Condition { return policy.Status.Conditions }, v1alpha1.ConditionPaused, metav1.ConditionTrue, v1alpha1.ReasonPaused, 30*time.Second)
	time.Sleep(5 * time.Second)
	if n := len(e.policySnapshots(policy.Name)); n != 0 {
		t.Errorf("a paused policy took %d snapshots", n)
	}
	if _, err := osClient.SnapshotNames(t.Context(), repo); err == nil {
		t.Error("a paused policy registered its repository")
	}

	if err := osClient.PutRepository(t.Context(), repo, "fs", map[string]any{"location": e.ns}); err != nil {
		t.Fatal(err)
	}
	vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "doomed-but-paused", Namespace: e.ns},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: repo, Indices: []string{vi.Name},
			DeletionPolicy: v1alpha1.SnapshotDeletionDelete}}
	e.create(vs)
	e.waitCondition(vs, func() []metav1.Condition { return vs.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "SnapshotSucceeded", 60*time.Second)
	e.update(vs, func() { vs.Annotations = paused })
	e.waitCondition(vs, func() []metav1.Condition { return vs.Status.Conditions }, v1alpha1.ConditionPaused, metav1.ConditionTrue, v1alpha1.ReasonPaused, 30*time.Second)
	if err := e.k8s.Delete(e.ctx, vs); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, clientKey(vs), vs)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if names, err := osClient.SnapshotNames(t.Context(), repo); err != nil || !slices.Contains(names, vs.Status.SnapshotName) {
		t.Errorf("deleting a paused VectorSnapshot deleted its snapshot: %v %v", names, err)
	}
}
