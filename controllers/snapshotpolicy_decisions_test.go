package controllers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestTakeDueSnapshot: a policy takes one snapshot per due slot — the latest one, named
// after it, so a retry of the same slot takes nothing more — none when suspended or not due,
// and reports a selection that matches no index.
func TestTakeDueSnapshot(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 30, 0, 0, time.UTC)
	hourly, err := parseSchedule("0 * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	index := func(name, cluster string) *v1alpha1.VectorIndex {
		vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"backup": "yes"}}}
		vi.Spec.ClusterRef.Name = cluster
		return vi
	}
	for _, tc := range []struct {
		name     string
		now      time.Time
		suspend  bool
		indexes  []*v1alpha1.VectorIndex
		runs     int
		want     []string
		degraded string
		// phases are the policy's snapshots already there, by phase.
		phases []string
	}{
		{"not due yet", created.Add(10 * time.Minute), false, []*v1alpha1.VectorIndex{index("a", "vectors")}, 1, nil, "", nil},
		{"due: the latest missed slot only", created.Add(3*time.Hour + 5*time.Minute), false, []*v1alpha1.VectorIndex{index("a", "vectors")}, 1,
			[]string{slotName(created.Truncate(time.Hour).Add(3 * time.Hour))}, "", nil},
		{"the same slot twice (a lost status write): one snapshot", created.Add(time.Hour), false, []*v1alpha1.VectorIndex{index("a", "vectors")}, 2,
			[]string{slotName(created.Truncate(time.Hour).Add(time.Hour))}, "", nil},
		{"suspended", created.Add(5 * time.Hour), true, []*v1alpha1.VectorIndex{index("a", "vectors")}, 1, nil, "", nil},
		{"selects no index of this cluster", created.Add(time.Hour), false, []*v1alpha1.VectorIndex{index("a", "other")}, 1, nil, v1alpha1.ReasonNoIndexes, nil},
		{"due while its last snapshot still runs: none", created.Add(time.Hour), false, []*v1alpha1.VectorIndex{index("a", "vectors")}, 1, nil, "",
			[]string{v1alpha1.SnapshotSucceeded, v1alpha1.SnapshotInProgress}},
		{"due while its last snapshot is not started: none", created.Add(time.Hour), false, []*v1alpha1.VectorIndex{index("a", "vectors")}, 1, nil, "",
			[]string{""}},
		{"due once its snapshots ended", created.Add(time.Hour), false, []*v1alpha1.VectorIndex{index("a", "vectors")}, 1,
			[]string{slotName(created.Truncate(time.Hour).Add(time.Hour))}, "", []string{v1alpha1.SnapshotSucceeded, v1alpha1.SnapshotFailed}},
	} {
		p := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Name: "daily", Namespace: "ns", UID: types.UID("uid-policy"),
			CreationTimestamp: metav1.NewTime(created)}}
		p.Spec.ClusterRef.Name, p.Spec.Repository.Name, p.Spec.Suspend = "vectors", "repo", tc.suspend
		b := fake.NewClientBuilder().WithScheme(Scheme())
		for _, vi := range tc.indexes {
			b = b.WithObjects(vi)
		}
		c := b.Build()
		r := &SnapshotPolicyReconciler{Client: c, Recorder: events.NewFakeRecorder(10), Options: Options{MaxRetryDelay: time.Minute}}
		var existing []v1alpha1.VectorSnapshot
		for i, phase := range tc.phases {
			existing = append(existing, v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("earlier-%d", i)}, Status: v1alpha1.VectorSnapshotStatus{Phase: phase}})
		}
		for range tc.runs {
			run := &policyRun{p: p.DeepCopy(), now: tc.now, schedule: hourly, snapshots: existing}
			r.takeDueSnapshot(context.Background(), run)
			if tc.degraded != "" {
				if d := meta.FindStatusCondition(run.p.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Reason != tc.degraded {
					t.Errorf("%s: Degraded %+v, want %s", tc.name, d, tc.degraded)
				}
			}
		}
		var list v1alpha1.VectorSnapshotList
		if err := c.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list.Items {
			names = append(names, s.Name)
			if !metav1.IsControlledBy(&s, p) || s.Spec.Repository != "repo" || len(s.Spec.Indices) != 1 {
				t.Errorf("%s: snapshot %s: controlled %v, spec %+v", tc.name, s.Name, metav1.IsControlledBy(&s, p), s.Spec)
			}
		}
		if len(names) != len(tc.want) || (len(names) == 1 && names[0] != tc.want[0]) {
			t.Errorf("%s: snapshots %v, want %v", tc.name, names, tc.want)
		}
	}
}

func slotName(slot time.Time) string { return fmt.Sprintf("daily-%d", slot.Unix()) }

// fakeRepositories records repository registrations and answers them with err.
type fakeRepositories struct {
	puts int
	err  error
}

func (f *fakeRepositories) PutRepository(context.Context, string, string, map[string]any) error {
	f.puts++
	return f.err
}

// TestRegisterRepository: the repository is registered (OpenSearch verifies it by writing
// to it) when the spec changed or the last attempt failed, not on every reconcile; a
// refusal is a transient RepositoryError.
func TestRegisterRepository(t *testing.T) {
	for _, tc := range []struct {
		name         string
		observed     int64
		ready        bool
		err          error
		wantPut      bool
		wantDegraded bool
	}{
		{"first time", 0, false, nil, true, false},
		{"spec changed", 1, true, nil, true, false},
		{"settled: not again", 2, true, nil, false, false},
		{"last attempt failed: again", 2, false, nil, true, false},
		{"refused", 0, false, &opensearch.APIError{Status: 500}, true, true},
	} {
		p := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Name: "daily", Namespace: "ns", Generation: 2}}
		p.Spec.Repository = v1alpha1.SnapshotRepository{Name: "repo", FS: &v1alpha1.FSRepository{Location: "/snapshots"}}
		p.Status.ObservedGeneration = tc.observed
		if tc.ready {
			meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReconciled})
		}
		f := &fakeRepositories{err: tc.err}
		r := &SnapshotPolicyReconciler{Options: Options{MaxRetryDelay: time.Minute}}
		got := r.registerRepository(context.Background(), &policyRun{p: p, osClient: f})
		if (f.puts == 1) != tc.wantPut || (got.Err != nil) != tc.wantDegraded {
			t.Errorf("%s: %d registrations, result %+v; want registration %v, retried %v", tc.name, f.puts, got, tc.wantPut, tc.wantDegraded)
		}
		if d := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded); tc.wantDegraded && (d == nil || d.Reason != v1alpha1.ReasonRepositoryError) {
			t.Errorf("%s: Degraded %+v, want RepositoryError", tc.name, d)
		}
	}
}

// TestRepositorySettings: the repository a policy registers, with shallow copies when asked.
func TestRepositorySettings(t *testing.T) {
	for _, tc := range []struct {
		repo     v1alpha1.SnapshotRepository
		typ      string
		settings map[string]any
	}{
		{v1alpha1.SnapshotRepository{Name: "r", S3: &v1alpha1.S3Repository{Bucket: "b", Client: "default"}}, "s3", map[string]any{"bucket": "b", "client": "default"}},
		{v1alpha1.SnapshotRepository{Name: "r", S3: &v1alpha1.S3Repository{Bucket: "b", BasePath: "p", Client: "c"}, ShallowCopy: true}, "s3",
			map[string]any{"bucket": "b", "base_path": "p", "client": "c", "remote_store_index_shallow_copy": true}},
		{v1alpha1.SnapshotRepository{Name: "r", FS: &v1alpha1.FSRepository{Location: "/snap"}}, "fs", map[string]any{"location": "/snap"}},
	} {
		typ, settings := repositorySettings(tc.repo)
		if typ != tc.typ || !reflect.DeepEqual(settings, tc.settings) {
			t.Errorf("%+v: %s %v, want %s %v", tc.repo, typ, settings, tc.typ, tc.settings)
		}
	}
}

// TestSnapshotPolicyReconcile drives whole reconciles of a SnapshotPolicy against
// controller-runtime's fake client, a fake repository API and a fixed clock: the
// repository registered once, Ready with the next slot and looked at again just after
// it; at the slot, one VectorSnapshot it controls; paused, nothing registered or taken
// though a slot is due.
func TestSnapshotPolicyReconcile(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 30, 0, 0, time.UTC)
	now := created.Add(10 * time.Minute)
	vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns"}}
	vi.Spec.ClusterRef.Name = "vectors"
	p := &v1alpha1.SnapshotPolicy{ObjectMeta: metav1.ObjectMeta{Name: "daily", Namespace: "ns", UID: "uid-policy", Generation: 1,
		CreationTimestamp: metav1.NewTime(created)}}
	p.Spec.ClusterRef.Name, p.Spec.Schedule = "vectors", "0 * * * *"
	p.Spec.Repository = v1alpha1.SnapshotRepository{Name: "repo", FS: &v1alpha1.FSRepository{Location: "/snapshots"}}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(vi, p).WithStatusSubresource(p).Build()
	f := &fakeRepositories{}
	r := &SnapshotPolicyReconciler{Client: c, Recorder: events.NewFakeRecorder(20),
		Options:    Options{MaxRetryDelay: time.Minute, IndexResyncInterval: time.Hour},
		Now:        func() time.Time { return now },
		openSearch: func(context.Context, string, string) (repositoryAPI, error) { return f, nil }}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	reconcile := func(step string) (*v1alpha1.SnapshotPolicy, ctrl.Result, []string) {
		t.Helper()
		answer, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var got v1alpha1.SnapshotPolicy
		if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		var list v1alpha1.VectorSnapshotList
		if err := c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		var taken []string
		for _, s := range list.Items {
			if metav1.IsControlledBy(&s, &got) {
				taken = append(taken, s.Name)
			}
		}
		return &got, answer, taken
	}

	slot := created.Truncate(time.Hour).Add(time.Hour)
	got, answer, taken := reconcile("not due")
	if f.puts != 1 || !conditions.IsReady(got.Status.Conditions) || got.Status.NextScheduleTime == nil || !got.Status.NextScheduleTime.Equal(&metav1.Time{Time: slot}) ||
		answer.RequeueAfter != slot.Sub(now)+time.Second || len(taken) != 0 || got.Status.ObservedGeneration != 1 {
		t.Fatalf("not due: %d registrations, conditions %+v, next %v, answer %+v, taken %v", f.puts, got.Status.Conditions, got.Status.NextScheduleTime, answer, taken)
	}
	now = slot.Add(time.Minute)
	if got, _, taken = reconcile("due"); f.puts != 1 || !slices.Equal(taken, []string{slotName(slot)}) {
		t.Fatalf("due: %d registrations, taken %v; want one registration and %s", f.puts, taken, slotName(slot))
	}

	got.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	got.Spec.Repository.FS.Location = "/elsewhere"
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	now = slot.Add(2 * time.Hour)
	if got, _, taken = reconcile("paused"); f.puts != 1 || len(taken) != 1 || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionPaused) {
		t.Errorf("paused: %d registrations, taken %v, conditions %+v; want nothing new and Paused", f.puts, taken, got.Status.Conditions)
	}
}
