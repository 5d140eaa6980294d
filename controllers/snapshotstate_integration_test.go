package controllers_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// faultyLine is an HTTP proxy to OpenSearch that answers 503 to the requests refuse picks,
// as an overloaded node or a load balancer in front of it would.
type faultyLine struct {
	*httptest.Server
	mu     sync.Mutex
	refuse func(*http.Request) bool
}

func startFaultyLine(t *testing.T, target string) *faultyLine {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &faultyLine{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		refuse := f.refuse != nil && f.refuse(r)
		f.mu.Unlock()
		if refuse {
			http.Error(w, `{"error":{"type":"unavailable","reason":"refused by the test's line"},"status":503}`, http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *faultyLine) set(refuse func(*http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = refuse
}

// TestSnapshotStateUnknownNeverDeletesABackup: the operator deletes a snapshot from its
// repository only about a state it has read. (1) The snapshot's _status call fails while
// its state reads SUCCESS: it is Succeeded, not stalled and aborted. (2) Its state cannot
// be read at all for longer than the stall timeout: it is unknown (condition and Event),
// retried, and Succeeded once readable — never aborted. (3) An object whose phase says
// Failed about a snapshot the repository reads SUCCESS, deleted with deletionPolicy Delete
// (as retention deletes failed ones), leaves the snapshot in the repository.
func TestSnapshotStateUnknownNeverDeletesABackup(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	nodeURL := testsupport.OpenSearchURL(t)
	direct := osClient(t, nodeURL)
	line := startFaultyLine(t, nodeURL)
	e.cluster("vectors", line.URL)
	repo := e.ns + "-fs"
	if err := direct.PutRepository(t.Context(), repo, "fs", map[string]any{"location": e.ns}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testsupport.Send(t, http.MethodDelete, nodeURL+"/_snapshot/"+repo, "") })
	vi := luceneIndex(e, "kept")
	e.create(vi)
	e.waitIndexReady(vi)
	base, _ := dataset.Generate(dataset.Spec{Count: 500, Queries: 1, Dim: 32, Seed: 3})
	ingest(t, direct, vi.Spec.IndexName, base)

	snapshot := func(name string) *v1alpha1.VectorSnapshot {
		vs := &v1alpha1.VectorSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: v1alpha1.VectorSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Repository: repo,
				Indices: []string{vi.Name}, DeletionPolicy: v1alpha1.SnapshotDeletionDelete}}
		e.create(vs)
		return vs
	}
	inRepository := func(vs *v1alpha1.VectorSnapshot) string {
		info, err := direct.GetSnapshot(t.Context(), repo, vs.Status.SnapshotName)
		if opensearch.IsNotFound(err) {
			return "missing"
		}
		if err != nil {
			t.Fatal(err)
		}
		return info.State
	}
	ended := func(vs *v1alpha1.VectorSnapshot, timeout time.Duration) {
		t.Helper()
		e.eventually(timeout, func() (bool, string) {
			_ = e.k8s.Get(e.ctx, client.ObjectKeyFromObject(vs), vs)
			return vs.Status.Phase == v1alpha1.SnapshotSucceeded || vs.Status.Phase == v1alpha1.SnapshotFailed, "phase " + vs.Status.Phase
		})
	}

	// (1) SUCCESS, its _status refused.
	line.set(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/_status") })
	first := snapshot("status-refused")
	ended(first, fastOptions.SnapshotStallTimeout+30*time.Second)
	t.Logf("(1) _status refused: phase %s, repository %s, failures %v", first.Status.Phase, inRepository(first), first.Status.Failures)
	if first.Status.Phase != v1alpha1.SnapshotSucceeded || inRepository(first) != "SUCCESS" {
		t.Errorf("(1) a snapshot read SUCCESS with its _status refused: phase %s %v, repository %s; want Succeeded and kept",
			first.Status.Phase, first.Status.Failures, inRepository(first))
	}

	// (2) Nothing about the snapshot readable for longer than the stall timeout.
	line.set(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/_snapshot/"+repo+"/")
	})
	second := snapshot("state-refused")
	e.waitCondition(second, func() []metav1.Condition { return second.Status.Conditions }, v1alpha1.ConditionDegraded, metav1.ConditionTrue,
		v1alpha1.ReasonSnapshotStateUnknown, 30*time.Second)
	e.waitEvent(second.Name, v1alpha1.ReasonSnapshotStateUnknown)
	time.Sleep(fastOptions.SnapshotStallTimeout + 5*time.Second)
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatal(err)
	}
	t.Logf("(2) state unreadable for %s (stall timeout %s): phase %s, repository %s", fastOptions.SnapshotStallTimeout+5*time.Second,
		fastOptions.SnapshotStallTimeout, second.Status.Phase, inRepository(second))
	if second.Status.Phase != v1alpha1.SnapshotInProgress || inRepository(second) != "SUCCESS" {
		t.Errorf("(2) a snapshot whose state is unreadable past the stall timeout: phase %s %v, repository %s; want InProgress (unknown) and kept",
			second.Status.Phase, second.Status.Failures, inRepository(second))
	}
	line.set(nil)
	ended(second, 30*time.Second)
	if second.Status.Phase != v1alpha1.SnapshotSucceeded {
		t.Errorf("(2) once readable: phase %s, want Succeeded", second.Status.Phase)
	}

	// (3) An object saying Failed about a snapshot the repository reads SUCCESS (what the
	// old operator wrote in (1) and (2)), deleted with deletionPolicy Delete.
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	first.Status.Phase = v1alpha1.SnapshotFailed
	if err := e.k8s.Status().Update(e.ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := e.k8s.Delete(e.ctx, first); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, func() (bool, string) {
		err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(first), first)
		return client.IgnoreNotFound(err) == nil && err != nil, "object still there"
	})
	if got := inRepository(first); got != "SUCCESS" {
		t.Errorf("(3) deleting an object that says Failed took its SUCCESS snapshot with it: repository %s", got)
	}
	e.waitEvent(first.Name, v1alpha1.ReasonSnapshotRetained)
}
