package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/controllers/operatortest"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/owners"
)

func TestMain(m *testing.M) {
	// Reconcile errors are expected in fault tests; only the conditions they leave are asserted.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel + 1)))
	code := testsupport.Main(m, testsupport.Kube|testsupport.Scheduling|testsupport.Argo|testsupport.OpenSearch)
	if code == 0 && testgate.Enabled() && (!sent.covered() || !sent.owned()) {
		code = 1
	}
	os.Exit(code)
}

// sentRequests records every request the operators under test send to OpenSearch, to hold
// them against the documented role (docs/security/operator-role.yml, generated from
// internal/opensearch's request table): a request the table does not describe fails the run.
// The settings they write are held against the owners table (internal/owners, shown in
// docs/concepts.md): a setting written without a row fails the run.
type sentRequests struct {
	mu        sync.Mutex
	actions   map[string]int
	unmatched map[string]int
	settings  map[opensearch.WrittenSetting]int
}

var sent = &sentRequests{actions: map[string]int{}, unmatched: map[string]int{}, settings: map[opensearch.WrittenSetting]int{}}

func (s *sentRequests) observe(req opensearch.SentRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := opensearch.PermissionsOf(req.Method, req.Path)
	if !ok {
		s.unmatched[req.Method+" "+req.Path]++
	}
	for _, w := range req.Settings {
		s.settings[w]++
	}
	for _, a := range slices.Concat(p.Cluster, p.Index) {
		s.actions[a]++
	}
}

// covered reports the actions the run needed and says whether every request had a rule.
func (s *sentRequests) covered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.actions))
	for a := range s.actions {
		names = append(names, a)
	}
	sort.Strings(names)
	fmt.Printf("OpenSearch actions the operator needed in this run (%d):\n", len(names))
	for _, a := range names {
		fmt.Printf("  %-40s %6d requests\n", a, s.actions[a])
	}
	for r, n := range s.unmatched {
		fmt.Printf("FAIL: the operator sent %s (%d times), which internal/opensearch/actions.go does not describe: the documented role would refuse it\n", r, n)
	}
	return len(s.unmatched) == 0
}

// owned reports the settings the run wrote and says whether each has a row in the owners
// table.
func (s *sentRequests) owned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	written := slices.SortedFunc(maps.Keys(s.settings), func(a, b opensearch.WrittenSetting) int {
		return strings.Compare(a.Scope+" "+a.Key, b.Scope+" "+b.Key)
	})
	fmt.Printf("OpenSearch settings the operator wrote in this run (%d):\n", len(written))
	ok := true
	for _, w := range written {
		fmt.Printf("  %-22s %-50s %6d requests\n", w.Scope, w.Key, s.settings[w])
		if !owners.Has(w.Scope, w.Key) {
			fmt.Printf("FAIL: the operator wrote the %s setting %s, which internal/owners' table does not list: say who writes it and when\n", w.Scope, w.Key)
			ok = false
		}
	}
	return ok
}

// fastOptions make the operator notice changes within seconds in tests.
var fastOptions = controllers.Options{ClusterPollInterval: 2 * time.Second, IndexResyncInterval: 2 * time.Second, MaxRetryDelay: 2 * time.Second, SnapshotStartTimeout: 15 * time.Second, SnapshotStallTimeout: 20 * time.Second, IndexRedGrace: 3 * time.Second,
	ObserveRequest: sent.observe}

var (
	nsSeq    atomic.Int32
	runToken = strconv.FormatInt(time.Now().UnixNano()%(36*36*36*36*36), 36)
)

// waitsMostly marks a test that spends most of its time waiting — certificate lifetimes,
// fault windows, timeouts the operator must sit out — and owns what it changes: its
// namespace, indexes, repositories, proxies, and any node or S3 server it starts. go test
// runs such tests side by side once the others are done (hack/test.sh lets 8 run at once),
// so the package does not wait through each in turn. Each left the machine's cores at most
// 45 % busy alone (make test's report gives the share beside every slow test). A test that
// reads or changes the shared node's cluster-wide state (its health, cluster settings, all
// its indexes) or judges by CPU does not qualify.
func waitsMostly(t *testing.T) { t.Parallel() }

// env is one test's namespace with the operator running against it.
type env struct {
	t   *testing.T
	ctx context.Context
	k8s client.Client
	ns  string
}

// startOperator creates a namespace and runs a manager that watches only it, until the
// test ends.
func startOperator(t *testing.T) *env {
	t.Helper()
	return startOperatorWith(t, fastOptions)
}

// startOperatorWith is startOperator with options of the test's own.
func startOperatorWith(t *testing.T, opts controllers.Options) *env {
	t.Helper()
	return startOperatorOver(t, opts, nil)
}

// startOperatorOver is startOperatorWith on a namespace that already holds what before
// creates there (what an older operator left), unless before is nil.
func startOperatorOver(t *testing.T, opts controllers.Options, before func(*env)) *env {
	t.Helper()
	// Index names derive from the namespace; the run token keeps them apart from indexes
	// an earlier run left on a shared node (which a new VectorIndex must treat as foreign).
	ns := fmt.Sprintf("t%d-%s-%s", nsSeq.Add(1), runToken, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.TrimRight(ns, "-")
	if before != nil {
		k8s, err := client.New(testsupport.ControlPlane(t).Config, client.Options{Scheme: controllers.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		e := &env{t: t, ctx: t.Context(), k8s: k8s, ns: ns}
		e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		before(e)
	}
	k8s := operatortest.Run(t, ns, "0", opts)
	return &env{t: t, ctx: t.Context(), k8s: k8s, ns: ns}
}

// cluster creates a SearchCluster pointing at url.
func (e *env) cluster(name, url string) *v1alpha1.SearchCluster {
	e.t.Helper()
	sc := &v1alpha1.SearchCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       v1alpha1.SearchClusterSpec{External: &v1alpha1.ExternalCluster{Endpoint: url}},
	}
	e.create(sc)
	return sc
}

func (e *env) create(o client.Object) {
	e.t.Helper()
	if err := e.k8s.Create(e.ctx, o); err != nil {
		e.t.Fatal(err)
	}
}

// update re-reads o, applies change and writes it back, retrying on conflicts.
func (e *env) update(o client.Object, change func()) {
	e.t.Helper()
	if err := e.tryUpdate(o, change); err != nil {
		e.t.Fatal(err)
	}
}

// tryUpdate re-reads o, applies change and writes it back, and returns the API server's
// answer to the change. The operator writes the object too (its status, its recorded
// defaults), so a conflict says nothing about the change: it is retried on the newest.
func (e *env) tryUpdate(o client.Object, change func()) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		change()
		return e.k8s.Update(e.ctx, o)
	})
}

// eventually polls check until it returns true or timeout passes; on timeout it fails with
// the last thing check said.
func (e *env) eventually(timeout time.Duration, check func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = check(); ok {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	e.t.Fatalf("timed out after %s: %s", timeout, last)
}

// waitCondition waits until the object's condition has the status and reason.
func (e *env) waitCondition(o client.Object, conds func() []metav1.Condition, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) {
	e.t.Helper()
	e.eventually(timeout, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return false, err.Error()
		}
		e.capture(o, conds())
		c := meta.FindStatusCondition(conds(), typ)
		if c == nil {
			return false, fmt.Sprintf("%s: no %s condition yet", o.GetName(), typ)
		}
		return c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration == o.GetGeneration(),
			fmt.Sprintf("%s: %s=%s reason=%s gen=%d/%d message=%q", o.GetName(), typ, c.Status, c.Reason, c.ObservedGeneration, o.GetGeneration(), c.Message)
	})
}

// captured are the status shapes written so far, by file name.
var captured sync.Map

// capture writes the object, as the operator left it, to $VECTORPILOT_CAPTURE_STATUS once
// per kind × summary state × reason (× paused), for the GitOps health tests
// (test/testdata/status: `make capture-status`).
func (e *env) capture(o client.Object, conds []metav1.Condition) {
	dir := os.Getenv("VECTORPILOT_CAPTURE_STATUS")
	if dir == "" {
		return
	}
	gvk, err := e.k8s.GroupVersionKindFor(o)
	if err != nil {
		e.t.Fatal(err)
	}
	state, reason := "New", "NoStatus"
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
		if c := meta.FindStatusCondition(conds, typ); c != nil && c.Status == metav1.ConditionTrue {
			state, reason = typ, c.Reason
		}
	}
	name := strings.ToLower(gvk.Kind) + "-" + state + "-" + reason
	if meta.IsStatusConditionTrue(conds, v1alpha1.ConditionPaused) {
		name += "-Paused"
	}
	if _, seen := captured.LoadOrStore(name, true); seen {
		return
	}
	// As the API server serves it, not as Go re-encodes it (which drops zero values the
	// server's defaults wrote, e.g. a new object's status.observedGeneration 0).
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(o), obj); err != nil {
		return // gone since: nothing to record
	}
	obj.SetManagedFields(nil)
	raw, err := yaml.Marshal(obj.Object)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), raw, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitIndexReady(vi *v1alpha1.VectorIndex) {
	e.t.Helper()
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, 90*time.Second)
}

// events are the Events recorded about the named object.
func (e *env) events(name string) []eventsv1.Event {
	e.t.Helper()
	var list eventsv1.EventList
	if err := e.k8s.List(e.ctx, &list, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvent waits for an Event with the reason about the named object, and returns its note.
func (e *env) waitEvent(name, reason string) string {
	e.t.Helper()
	var note string
	e.eventually(30*time.Second, func() (bool, string) {
		var seen []string
		for _, ev := range e.events(name) {
			if ev.Reason == reason {
				note = ev.Note
				return true, ""
			}
			seen = append(seen, ev.Reason)
		}
		return false, fmt.Sprintf("no %s event for %s; seen %v", reason, name, seen)
	})
	return note
}

func osClient(t *testing.T, url string) *opensearch.Client {
	t.Helper()
	c, err := opensearch.New(opensearch.Config{Endpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ingest writes vectors into the index by id (0..n-1) and refreshes it, so they are searchable.
func ingest(t *testing.T, osClient *opensearch.Client, index string, v dataset.Vectors) {
	t.Helper()
	if err := bench.Ingest(t.Context(), osClient, index, "embedding", v, 1000, nil); err != nil {
		t.Fatal(err)
	}
	if err := osClient.Refresh(t.Context(), index); err != nil {
		t.Fatal(err)
	}
}

// differingTopTens runs the queries on index and counts those whose top 10 ids differ from
// want's.
func differingTopTens(t *testing.T, c *opensearch.Client, index string, queries dataset.Vectors, want [][]int) int {
	t.Helper()
	got, err := bench.SearchIDs(t.Context(), c, index, "embedding", queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	return bench.Differing(got, want)
}

func clientKey(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }

// secret is a user's Secret that every SearchCluster of its namespace may use
// (connect.ConsentAnnotation); TestSecretsNeedTheirOwnersConsent covers one that does not.
func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{connect.ConsentAnnotation: "*"}}, StringData: data}
}
