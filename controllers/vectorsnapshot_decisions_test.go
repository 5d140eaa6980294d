package controllers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// fakeSnapshots answers snapshotAPI with one snapshot's state, recording creations and
// aborts; CreateSnapshot is refused unless creatable.
type fakeSnapshots struct {
	info      opensearch.SnapshotInfo
	getErr    error
	running   opensearch.SnapshotInfo
	deletes   int
	creatable bool
	created   []string // the indices of each snapshot created
	calls     int      // every call
}

func (f *fakeSnapshots) CreateSnapshot(_ context.Context, _, _ string, indices []string, _ map[string]any) error {
	f.calls++
	if !f.creatable {
		return errNotFaked
	}
	f.created = append(f.created, strings.Join(indices, ","))
	return nil
}
func (f *fakeSnapshots) GetSnapshot(context.Context, string, string) (opensearch.SnapshotInfo, error) {
	f.calls++
	return f.info, f.getErr
}
func (f *fakeSnapshots) RunningSnapshot(context.Context, string, string) (opensearch.SnapshotInfo, bool, error) {
	f.calls++
	return f.running, f.running.State != "", nil
}
func (f *fakeSnapshots) DeleteSnapshot(context.Context, string, string) error {
	f.calls++
	f.deletes++
	return nil
}

// TestFollowProgress: a running snapshot is judged by its progress, never by its age: it
// succeeds, ends FAILED or PARTIAL, or — when it is read IN_PROGRESS with shards and bytes
// not moving for the stall timeout — is aborted and Failed. A state or progress that
// cannot be read is unknown: retried and reported, never a reason to abort or fail.
func TestFollowProgress(t *testing.T) {
	moving := opensearch.SnapshotProgress{ShardsDone: 1, ShardsTotal: 3, BytesDone: 500, BytesTotal: 1000}
	stale := metav1.NewTime(time.Now().Add(-time.Hour))
	recent := metav1.NewTime(time.Now().Add(-time.Second))
	last := func(at metav1.Time) *v1alpha1.SnapshotProgress {
		return &v1alpha1.SnapshotProgress{ShardsDone: 1, ShardsTotal: 3, BytesDone: 500, BytesTotal: 1000, LastProgressTime: &at}
	}
	for _, tc := range []struct {
		name      string
		f         fakeSnapshots
		progress  *v1alpha1.SnapshotProgress
		phase     string
		reason    string
		aborted   bool
		retried   bool
		pollAgain bool
	}{
		{"done", fakeSnapshots{info: opensearch.SnapshotInfo{State: "SUCCESS", SizeBytes: 1000}}, nil, v1alpha1.SnapshotSucceeded, v1alpha1.ReasonSnapshotSucceeded, false, false, false},
		{"ended PARTIAL", fakeSnapshots{info: opensearch.SnapshotInfo{State: "PARTIAL", Failures: []string{"shard 2"}}}, nil, v1alpha1.SnapshotFailed, v1alpha1.ReasonSnapshotPartial, false, false, false},
		{"ended FAILED", fakeSnapshots{info: opensearch.SnapshotInfo{State: "FAILED"}}, nil, v1alpha1.SnapshotFailed, v1alpha1.ReasonSnapshotFailed, false, false, false},
		{"an hour old and moving", fakeSnapshots{info: opensearch.SnapshotInfo{State: "IN_PROGRESS", Progress: opensearch.SnapshotProgress{ShardsDone: 2, ShardsTotal: 3}}}, last(stale),
			v1alpha1.SnapshotInProgress, "", false, false, true},
		{"not moving for longer than the stall timeout", fakeSnapshots{info: opensearch.SnapshotInfo{State: "IN_PROGRESS", Progress: moving}}, last(stale),
			v1alpha1.SnapshotFailed, v1alpha1.ReasonSnapshotStalled, true, false, false},
		{"status unreadable, recently moving: retried", fakeSnapshots{getErr: &opensearch.APIError{Status: 500}}, last(recent),
			v1alpha1.SnapshotInProgress, "", false, true, false},
		{"status unreadable past the stall timeout: unknown, retried, never aborted", fakeSnapshots{getErr: &opensearch.APIError{Status: 500}}, last(stale),
			v1alpha1.SnapshotInProgress, v1alpha1.ReasonSnapshotStateUnknown, false, true, false},
		{"SUCCESS read, its progress not: Succeeded, never aborted", fakeSnapshots{info: opensearch.SnapshotInfo{State: "SUCCESS"}, getErr: &opensearch.TransportError{Op: "GET _status", Err: errors.New("reset")}}, last(stale),
			v1alpha1.SnapshotSucceeded, v1alpha1.ReasonSnapshotSucceeded, false, false, false},
		{"IN_PROGRESS read, its progress not, past the stall timeout: retried, never aborted", fakeSnapshots{info: opensearch.SnapshotInfo{State: "IN_PROGRESS"}, getErr: &opensearch.APIError{Status: 503}}, last(stale),
			v1alpha1.SnapshotInProgress, v1alpha1.ReasonSnapshotStateUnknown, false, true, false},
		{"repository unreadable, read running from the cluster state and not moving: aborted", fakeSnapshots{getErr: &opensearch.APIError{Status: 500},
			running: opensearch.SnapshotInfo{State: "IN_PROGRESS", Progress: moving}}, last(stale),
			v1alpha1.SnapshotFailed, v1alpha1.ReasonSnapshotStalled, true, false, false},
		{"repository unreadable, read running and moving: polled", fakeSnapshots{getErr: &opensearch.APIError{Status: 500},
			running: opensearch.SnapshotInfo{State: "IN_PROGRESS", Progress: opensearch.SnapshotProgress{ShardsDone: 2, ShardsTotal: 3}}}, last(stale),
			v1alpha1.SnapshotInProgress, "", false, false, true},
		{"gone from the repository", fakeSnapshots{getErr: &opensearch.APIError{Status: 404}}, nil, v1alpha1.SnapshotFailed, v1alpha1.ReasonSnapshotMissing, false, false, false},
	} {
		vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Generation: 1}}
		vs.Spec.Repository = "repo"
		vs.Status.Phase, vs.Status.SnapshotName, vs.Status.Progress = v1alpha1.SnapshotInProgress, "s-1234", tc.progress
		r := &VectorSnapshotReconciler{Recorder: events.NewFakeRecorder(10), Options: Options{SnapshotStallTimeout: 20 * time.Minute}}
		got := r.followProgress(context.Background(), &snapshotRun{vs: vs, osClient: &tc.f})
		if vs.Status.Phase != tc.phase || (tc.f.deletes > 0) != tc.aborted || (got.Err != nil) != tc.retried || (got == steps.After(snapshotPollInterval)) != tc.pollAgain {
			t.Errorf("%s: phase %s, %d aborts, result %+v; want %s, aborted %v, retried %v, polled %v", tc.name, vs.Status.Phase, tc.f.deletes, got,
				tc.phase, tc.aborted, tc.retried, tc.pollAgain)
		}
		if tc.reason != "" {
			c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionReady)
			if tc.phase != v1alpha1.SnapshotSucceeded {
				c = meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionDegraded)
			}
			if c == nil || c.Reason != tc.reason || c.Status != metav1.ConditionTrue {
				t.Errorf("%s: condition %+v, want reason %s", tc.name, c, tc.reason)
			}
		}
		if tc.reason == v1alpha1.ReasonSnapshotStalled && !strings.Contains(strings.Join(vs.Status.Failures, " "), "no progress") {
			t.Errorf("%s: failures %v do not say it made no progress", tc.name, vs.Status.Failures)
		}
	}
}

// TestVectorSnapshotReconcile drives whole reconciles of a VectorSnapshot, as the manager
// would, against controller-runtime's fake client and a fake OpenSearch: started (its
// finalizer first), followed to Succeeded, left alone once finished or paused, and
// deleted from the repository with it under deletionPolicy Delete.
func TestVectorSnapshotReconcile(t *testing.T) {
	vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "docs"}}
	vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", Generation: 2, UID: "u-1"},
		Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: "s3",
			Indices: []string{"docs"}, DeletionPolicy: v1alpha1.SnapshotDeletionDelete}}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(vi, vs).WithStatusSubresource(vs).Build()
	f := &fakeSnapshots{creatable: true}
	r := &VectorSnapshotReconciler{Client: c, Recorder: events.NewFakeRecorder(20),
		openSearch: func(context.Context, string, string) (snapshotAPI, error) { return f, nil }}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vs)}
	reconcile := func(step string) (*v1alpha1.VectorSnapshot, ctrl.Result) {
		t.Helper()
		return reconcileOnce[v1alpha1.VectorSnapshot](t, r, c, req.NamespacedName, step)
	}
	summary := func(got *v1alpha1.VectorSnapshot) string {
		for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
			if c := meta.FindStatusCondition(got.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
				return typ + "/" + c.Reason
			}
		}
		return "none"
	}

	got, answer := reconcile("start")
	if !controllerutil.ContainsFinalizer(got, SnapshotFinalizer) || got.Status.Phase != v1alpha1.SnapshotInProgress ||
		got.Status.ObservedGeneration != 2 || !slices.Equal(f.created, []string{"docs"}) || answer.RequeueAfter != snapshotPollInterval ||
		summary(got) != v1alpha1.ConditionProgressing+"/"+v1alpha1.ReasonSnapshotStarted {
		t.Fatalf("started: finalizer %v, phase %q, observed %d, created %v, answer %+v, %s",
			got.Finalizers, got.Status.Phase, got.Status.ObservedGeneration, f.created, answer, summary(got))
	}
	f.info = opensearch.SnapshotInfo{State: "SUCCESS", SizeBytes: 1000}
	if got, _ = reconcile("follow"); got.Status.Phase != v1alpha1.SnapshotSucceeded || summary(got) != v1alpha1.ConditionReady+"/"+v1alpha1.ReasonSnapshotSucceeded {
		t.Fatalf("followed: phase %q, %s", got.Status.Phase, summary(got))
	}
	calls := f.calls
	if got, answer = reconcile("finished"); f.calls != calls || !answer.IsZero() || got.Status.Phase != v1alpha1.SnapshotSucceeded {
		t.Errorf("finished: %d calls to OpenSearch, answer %+v; want none and no requeue", f.calls-calls, answer)
	}

	got.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, _ = reconcile("paused"); f.calls != calls || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionPaused) {
		t.Errorf("paused: %d calls to OpenSearch, Paused %v", f.calls-calls, got.Status.Conditions)
	}
	delete(got.Annotations, v1alpha1.PausedAnnotation)
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, _ = reconcile("deleted"); got != nil || f.deletes != 1 {
		t.Errorf("deleted: object %v, %d deletions from the repository; want it gone after one", got != nil, f.deletes)
	}
}
