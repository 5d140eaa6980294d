package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// fakeSnapshots answers snapshotAPI with one snapshot's state, recording aborts.
type fakeSnapshots struct {
	info    opensearch.SnapshotInfo
	getErr  error
	running opensearch.SnapshotInfo
	deletes int
}

func (f *fakeSnapshots) CreateSnapshot(context.Context, string, string, []string, map[string]any) error {
	return errNotFaked
}
func (f *fakeSnapshots) GetSnapshot(context.Context, string, string) (opensearch.SnapshotInfo, error) {
	return f.info, f.getErr
}
func (f *fakeSnapshots) RunningSnapshot(context.Context, string, string) (opensearch.SnapshotInfo, bool, error) {
	return f.running, f.running.State != "", nil
}
func (f *fakeSnapshots) DeleteSnapshot(context.Context, string, string) error {
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
