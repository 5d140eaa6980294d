package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// fakeSettings records settings writes and answers them with err.
type fakeSettings struct {
	puts []map[string]any
	err  error
}

func (f *fakeSettings) PutSettings(_ context.Context, _ string, s map[string]any) error {
	f.puts = append(f.puts, s)
	return f.err
}

// The runs of these tests have no representations: no scratch index is looked up.
func (f *fakeSettings) GetIndex(context.Context, string) (*opensearch.Index, error) {
	return nil, &opensearch.APIError{Status: 404}
}

func (f *fakeSettings) DeleteIndex(context.Context, string) error { return nil }

// TestPutSettingsBack: a finished run puts back exactly what it recorded before changing
// anything (a setting that was not set is reset), then forgets it and lets go; an index or
// cluster that is gone has nothing to put back to; a failure keeps the record and the
// finalizer, to try again.
func TestPutSettingsBack(t *testing.T) {
	saved := map[string]string{"index.refresh_interval": "1s", "index.search.concurrent.max_slice_count": ""}
	for _, tc := range []struct {
		name      string
		index     bool
		clusterOK bool
		putErr    error
		wantPut   bool
		wantKept  bool
	}{
		{"put back", true, true, nil, true, false},
		{"the index was deleted meanwhile", true, true, &opensearch.APIError{Status: 404}, true, false},
		{"the VectorIndex is gone", false, true, nil, false, false},
		{"the SearchCluster is gone", true, false, nil, false, false},
		{"OpenSearch refuses: kept to try again", true, true, &opensearch.APIError{Status: 503}, true, true},
	} {
		run := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", Finalizers: []string{BenchmarkFinalizer}}}
		run.Spec.IndexRef.Name = "docs"
		run.Status.Phase, run.Status.RestoreSettings = v1alpha1.BenchmarkSucceeded, saved
		objs := []client.Object{run}
		if tc.index {
			vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns"}}
			vi.Spec.IndexName, vi.Spec.ClusterRef.Name = "docs-v1", "vectors"
			objs = append(objs, vi)
		}
		c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(run).Build()
		f := &fakeSettings{err: tc.putErr}
		r := &BenchmarkRunReconciler{Client: c, Recorder: events.NewFakeRecorder(10),
			openSearch: func(context.Context, string, string) (settingsAPI, error) {
				if !tc.clusterOK {
					return nil, &connect.Error{Reason: v1alpha1.ReasonClusterNotFound, Message: "gone"}
				}
				return f, nil
			}}
		err := r.putSettingsBack(context.Background(), run)
		if (len(f.puts) == 1) != tc.wantPut || (err != nil) != tc.wantKept {
			t.Errorf("%s: %d writes, error %v; want a write %v, an error %v", tc.name, len(f.puts), err, tc.wantPut, tc.wantKept)
		}
		if tc.wantPut {
			if got := f.puts[0]; got["index.refresh_interval"] != "1s" || got["index.search.concurrent.max_slice_count"] != nil || len(got) != 2 {
				t.Errorf("%s: wrote %v, want refresh 1s and max_slice_count reset", tc.name, got)
			}
		}
		var after v1alpha1.BenchmarkRun
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(run), &after); err != nil {
			t.Fatal(err)
		}
		kept := after.Status.RestoreSettings != nil && len(after.Finalizers) == 1
		if kept != tc.wantKept {
			t.Errorf("%s: record and finalizer kept %v (settings %v, finalizers %v), want %v", tc.name, kept, after.Status.RestoreSettings, after.Finalizers, tc.wantKept)
		}
	}
}

// TestWorkflowAccess: an Argo run's steps reach the cluster as the operator does — a
// secured managed cluster through the operator's user and the cluster's CA bundle, an
// external one through its credentials Secret (only with that Secret's consent) and its CA
// Secret — by names the steps mount, never values.
func TestWorkflowAccess(t *testing.T) {
	managedSC := func(security v1alpha1.ClusterSecurity) *v1alpha1.SearchCluster {
		return &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"},
			Spec: v1alpha1.SearchClusterSpec{Managed: &v1alpha1.ManagedCluster{Security: security}}}
	}
	external := func(creds string) *v1alpha1.SearchCluster {
		return &v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Name: "vectors", Namespace: "ns"},
			Spec: v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: "https://os:9200",
				CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: creds}, CASecretRef: &v1alpha1.LocalObjectReference{Name: "os-ca"}}}}
	}
	secret := func(name, consent string) client.Object {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}}
		if consent != "" {
			s.Annotations = map[string]string{connect.ConsentAnnotation: consent}
		}
		return s
	}
	reader := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(secret("consenting", "vectors"), secret("private", "")).Build()
	off := false
	for _, tc := range []struct {
		name string
		sc   *v1alpha1.SearchCluster
		want benchrun.Access
		err  string
	}{
		{"secured managed", managedSC(v1alpha1.ClusterSecurity{}), benchrun.Access{CredentialsSecret: "vectors-vectorpilot-credentials", CAConfigMap: "vectors-ca-bundle"}, ""},
		{"managed, security off", managedSC(v1alpha1.ClusterSecurity{Enabled: &off}), benchrun.Access{}, ""},
		{"external, the Secret consents", external("consenting"), benchrun.Access{CredentialsSecret: "consenting", CASecret: "os-ca"}, ""},
		{"external, the Secret does not consent", external("private"), benchrun.Access{}, v1alpha1.ReasonSecretNotAllowed},
	} {
		_, got, err := workflowAccess(context.Background(), &connect.Resolver{Reader: reader}, tc.sc)
		var ce *connect.Error
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && (!errors.As(err, &ce) || ce.Reason != tc.err)) {
			t.Errorf("%s: %+v, %v; want %+v, %s", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestBenchmarkRunReconcile drives whole reconciles of a BenchmarkRun against
// controller-runtime's fake client: Pending while its index is missing (its finalizer
// first, looked at again at the poll interval), nothing while paused, and once finished
// the finalizer let go with nothing to put back and no requeue; a run deleted while
// pending goes.
func TestBenchmarkRunReconcile(t *testing.T) {
	run := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: "sweep", Namespace: "ns", Generation: 1}}
	run.Spec.IndexRef.Name = "docs"
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(run).WithStatusSubresource(run).Build()
	r := &BenchmarkRunReconciler{Client: c, Recorder: events.NewFakeRecorder(10), Options: Options{ClusterPollInterval: 30 * time.Second}}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(run)}
	reconcile := func(step string) (*v1alpha1.BenchmarkRun, ctrl.Result) {
		t.Helper()
		return reconcileOnce[v1alpha1.BenchmarkRun](t, r, c, req.NamespacedName, step)
	}

	got, answer := reconcile("pending")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing); !controllerutil.ContainsFinalizer(got, BenchmarkFinalizer) ||
		got.Status.Phase != v1alpha1.BenchmarkPending || c == nil || c.Reason != v1alpha1.ReasonIndexNotFound || answer.RequeueAfter != 30*time.Second ||
		got.Status.ObservedGeneration != 1 {
		t.Fatalf("pending: finalizers %v, phase %q, Progressing %+v, answer %+v, observed %d", got.Finalizers, got.Status.Phase, c, answer, got.Status.ObservedGeneration)
	}
	got.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, answer = reconcile("paused"); !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionPaused) || !answer.IsZero() {
		t.Errorf("paused: conditions %+v, answer %+v; want Paused and no requeue", got.Status.Conditions, answer)
	}

	got.Status.Phase = v1alpha1.BenchmarkSucceeded
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, answer = reconcile("finished"); controllerutil.ContainsFinalizer(got, BenchmarkFinalizer) || !answer.IsZero() {
		t.Errorf("finished: finalizers %v, answer %+v; want none and no requeue", got.Finalizers, answer)
	}

	pending := &v1alpha1.BenchmarkRun{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}}
	pending.Spec.IndexRef.Name = "docs"
	if err := c.Create(ctx, pending); err != nil {
		t.Fatal(err)
	}
	req.NamespacedName = client.ObjectKeyFromObject(pending)
	if got, _ = reconcile("other pending"); !controllerutil.ContainsFinalizer(got, BenchmarkFinalizer) {
		t.Fatalf("other pending: finalizers %v", got.Finalizers)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, _ = reconcile("deleted"); got != nil {
		t.Errorf("deleted while pending: still there with finalizers %v", got.Finalizers)
	}
}
