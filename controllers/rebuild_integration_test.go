package controllers_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers/operatortest"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// liveLoad is a client of the index while it is rebuilt: a query loop and a writer, both
// through the index's name (an alias once the first rebuild swapped).
type liveLoad struct {
	c     *opensearch.Client
	index string
	dim   int
	stop  chan struct{}
	wg    sync.WaitGroup

	queries, failedQueries, emptyQueries atomic.Int64
	// failures are the failed queries' errors and times.
	failures  []string
	mu        sync.Mutex
	latencies []time.Duration
	// acked is the last acknowledged write per id: its rev, or -1 for a delete.
	acked map[string]int
	// refused counts writes the index refused (its write block), retried until acknowledged.
	refused atomic.Int64
	writes  atomic.Int64
}

func startLiveLoad(t *testing.T, c *opensearch.Client, index string, dim, existing int) *liveLoad {
	l := &liveLoad{c: c, index: index, dim: dim, stop: make(chan struct{}), acked: map[string]int{}}
	l.wg.Add(2)
	go l.query()
	go l.write(existing)
	t.Cleanup(l.halt)
	return l
}

func (l *liveLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *liveLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *liveLoad) query() {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(1, 2))
	for !l.stopped() {
		v := make([]float32, l.dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		start := time.Now()
		res, err := l.c.Search(context.Background(), l.index, opensearch.KNNQuery("embedding", v, 10))
		took := time.Since(start)
		l.queries.Add(1)
		switch {
		case err != nil:
			l.failedQueries.Add(1)
			l.mu.Lock()
			l.failures = append(l.failures, start.UTC().Format("15:04:05.000")+": "+err.Error())
			l.mu.Unlock()
		case len(res.Hits) == 0:
			l.emptyQueries.Add(1)
		}
		l.mu.Lock()
		l.latencies = append(l.latencies, took)
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// write indexes new documents, overwrites existing ones and deletes some, one request
// each, retrying a refused one until it is acknowledged (or the load stops).
func (l *liveLoad) write(existing int) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; !l.stopped(); n++ {
		var id, line string
		rev := n
		switch n % 10 {
		case 0: // delete an original document
			id = strconv.Itoa(rng.IntN(existing))
			line = fmt.Sprintf(`{"delete":{"_index":%q,"_id":%q}}`+"\n", l.index, id)
			rev = -1
		case 1, 2, 3: // overwrite an original document
			id = strconv.Itoa(rng.IntN(existing))
		default:
			id = "w-" + strconv.Itoa(n)
		}
		if rev >= 0 {
			v := make([]float32, l.dim)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			doc, _ := json.Marshal(map[string]any{"embedding": v, "rev": rev})
			line = fmt.Sprintf(`{"index":{"_index":%q,"_id":%q}}`+"\n%s\n", l.index, id, doc)
		}
		for !l.stopped() {
			err := l.c.Bulk(context.Background(), []byte(line))
			if err == nil {
				l.mu.Lock()
				l.acked[id] = rev
				l.mu.Unlock()
				l.writes.Add(1)
				break
			}
			l.refused.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// p90 of the query latencies recorded since mark, and the new mark.
func (l *liveLoad) p90Since(mark int) (time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lat := slices.Clone(l.latencies[mark:])
	slices.Sort(lat)
	if len(lat) == 0 {
		return 0, len(l.latencies)
	}
	return lat[len(lat)*9/10], len(l.latencies)
}

// verify checks that the index holds exactly every acknowledged write: the last rev of each
// written id, and no deleted id.
func (l *liveLoad) verify(t *testing.T) {
	t.Helper()
	if err := l.c.Refresh(t.Context(), l.index); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(l.acked))
	for id := range l.acked {
		ids = append(ids, id)
	}
	lost, resurrected, stale := 0, 0, 0
	var examples []string // the first few, with the rev acknowledged and the rev found
	for start := 0; start < len(ids); start += 1000 {
		batch := ids[start:min(start+1000, len(ids))]
		res, err := l.c.Search(t.Context(), l.index, map[string]any{"size": len(batch), "_source": []string{"rev"}, "query": map[string]any{"ids": map[string]any{"values": batch}}})
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]int{}
		for _, h := range res.Hits {
			var doc struct {
				Rev *int `json:"rev"`
			}
			_ = json.Unmarshal(h.Source, &doc)
			found[h.ID] = -2
			if doc.Rev != nil {
				found[h.ID] = *doc.Rev
			}
		}
		for _, id := range batch {
			got, ok := found[id]
			want := l.acked[id]
			switch {
			case want == -1 && ok:
				resurrected++
			case want >= 0 && !ok:
				lost++
			case want >= 0 && got != want:
				stale++
			default:
				continue
			}
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("%s: acknowledged rev %d, found %d (present %v)", id, want, got, ok))
			}
		}
	}
	t.Logf("writes: %d acknowledged (%d ids), %d refused by the write block and retried; after: %d lost, %d deleted ones back, %d stale",
		l.writes.Load(), len(ids), l.refused.Load(), lost, resurrected, stale)
	if lost+resurrected+stale > 0 {
		t.Errorf("acknowledged writes not in the index: %d lost, %d deleted documents back, %d with another rev (rev -1: deleted); first: %s", lost, resurrected, stale, strings.Join(examples, "; "))
	}
}

// waitRebuild waits until the object's status.rebuild satisfies done, and returns it.
func (e *env) waitRebuild(vi *v1alpha1.VectorIndex, timeout time.Duration, done func(*v1alpha1.RebuildStatus) bool) *v1alpha1.RebuildStatus {
	e.t.Helper()
	e.eventually(timeout, func() (bool, string) {
		if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
			return false, err.Error()
		}
		rb := vi.Status.Rebuild
		return rb != nil && done(rb), fmt.Sprintf("status.rebuild %+v; conditions %+v", rb, vi.Status.Conditions)
	})
	return vi.Status.Rebuild
}

// copying: the copy runs and has copied something.
func copying(rb *v1alpha1.RebuildStatus) bool {
	return rb.Phase == v1alpha1.RebuildCopying && len(rb.Tasks) > 0 && rb.DocumentsCopied > 0
}

// ended says the rebuild of the object's current generation ended in phase.
func ended(vi *v1alpha1.VectorIndex, phase string) func(*v1alpha1.RebuildStatus) bool {
	return func(rb *v1alpha1.RebuildStatus) bool {
		return rb.ObservedGeneration == vi.Generation && rb.Phase == phase
	}
}

// TestBlueGreenRebuildUnderLoad: 50,000 vectors in two shards, a query loop and a writer
// (new documents, overwrites, deletions) on the index's name throughout; the index is
// created under BlueGreen, so behind its alias. (a) lucene m 16 → 32, with the operator
// stopped mid-copy and a new one resuming; (b) lucene → faiss; (c) a change whose index fails the
// recall gate leaves clients on the serving index, RebuildGateFailed and Degraded True;
// (d) reverting to (a)'s spec rolls back onto the index (a) built, kept since (b)'s swap.
// Every query answers, every acknowledged write is found after, and deleting the object
// deletes every index it made.
func TestBlueGreenRebuildUnderLoad(t *testing.T) {
	url := testsupport.OpenSearchURL(t)
	c := osClient(t, url)
	const docs, dim = 50000, 16
	ns := fmt.Sprintf("t%d-%s-bluegreen", nsSeq.Add(1), runToken)
	var e *env
	var vi *v1alpha1.VectorIndex
	t.Run("first operator", func(t *testing.T) {
		e = &env{t: t, ctx: t.Context(), k8s: operatortest.Run(t, ns, "0", fastOptions), ns: ns}
		e.cluster("vectors", url)
		vi = indexOf(e, "bg", v1alpha1.VectorField{Name: "embedding", Dimension: dim, Engine: "lucene",
			Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16), EfConstruction: ptr.To[int32](64)}}})
		vi.Spec.Shards = 2
		vi.Spec.Replicas = 0
		vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen, MaxDocsPerSecond: ptr.To[int32](5000),
			RetainPrevious: &metav1.Duration{Duration: time.Hour},
			Gate:           v1alpha1.RebuildGate{MinRecall: "0.9", MaxLatencyRegressionPercent: 300, K: 10, SampleSize: 50}}
		e.create(vi)
		e.waitIndexReady(vi)
		base, _ := dataset.Generate(dataset.Spec{Count: docs, Queries: 1, Dim: dim, Clusters: 1, Spread: 1, Seed: 41})
		ingest(t, c, vi.Spec.IndexName, base)
	})
	alias := vi.Spec.IndexName
	load := startLiveLoad(t, c, alias, dim, docs)
	// The first seconds warm the JVM and the graphs up; the p90 before is of the next three.
	time.Sleep(2 * time.Second)
	_, mark := load.p90Since(0)
	time.Sleep(3 * time.Second)
	before, mark := load.p90Since(mark)

	// (a) m 16 → 32, the operator killed while it copies.
	t.Run("operator killed mid-copy", func(t *testing.T) {
		e.t, e.ctx = t, t.Context()
		e.k8s = operatortest.Run(t, ns, "0", fastOptions)
		e.update(vi, func() { vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](32) })
		e.waitRebuild(vi, 2*time.Minute, copying)
		t.Logf("stopping the operator at %d of %d documents copied (tasks %v)", vi.Status.Rebuild.DocumentsCopied, vi.Status.Rebuild.DocumentsTotal, vi.Status.Rebuild.Tasks)
	})
	e.t, e.ctx = t, t.Context()
	e.k8s = operatortest.Run(t, ns, "0", fastOptions)
	waitRebuild := func(phase string) *v1alpha1.RebuildStatus {
		t.Helper()
		return e.waitRebuild(vi, 4*time.Minute, ended(vi, phase))
	}
	report := func(step string, rb *v1alpha1.RebuildStatus) {
		during, m := load.p90Since(mark)
		mark = m
		t.Logf("%s: %s → %s in %d passes, gate %s; writes refused for %sms (%s); query p90 %s before, %s during",
			step, rb.Source, rb.Target, rb.Passes, gateText(rb.Gate), deref(rb.WriteBlockedMillis), rb.Message, before, during)
	}
	rb := waitRebuild(v1alpha1.RebuildSucceeded)
	report("lucene m 16 → 32", rb)
	servesA := rb.Target
	if got := liveIndex(t, c, alias); got.Name != servesA || vi.Status.Alias != alias || vi.Status.IndexName != servesA {
		t.Errorf("after (a) %s resolves to %s (status: alias %q, index %q), want %s", alias, got.Name, vi.Status.Alias, vi.Status.IndexName, servesA)
	}
	if rb.Source != alias+"-r1" {
		t.Errorf("(a) rebuilt %s, want %s-r1: an index created under BlueGreen is behind its alias from the start", rb.Source, alias)
	}
	if p := property(t, liveIndex(t, c, servesA), "embedding"); fmt.Sprint(p["method"].(map[string]any)["parameters"].(map[string]any)["m"]) != "32" {
		t.Errorf("after (a) the serving index's method is %v, want m 32", p["method"])
	}
	if prev := vi.Status.PreviousIndex; prev == nil || prev.Name != alias+"-r1" || liveIndex(t, c, prev.Name).Settings["index.blocks.write"] != "true" {
		t.Errorf("after (a) previous index %+v, want %s-r1 kept write-blocked", prev, alias)
	}

	// (b) lucene → faiss.
	e.update(vi, func() { vi.Spec.Fields[0].Engine = "faiss" })
	rb = waitRebuild(v1alpha1.RebuildSucceeded)
	report("lucene → faiss", rb)
	if p := property(t, liveIndex(t, c, alias), "embedding"); p["method"].(map[string]any)["engine"] != "faiss" {
		t.Errorf("after (b) the serving index's method is %v, want faiss", p["method"])
	}
	servesB := rb.Target
	if prev := vi.Status.PreviousIndex; prev == nil || prev.Name != servesA {
		t.Errorf("after (b) previous index %+v, want %s", prev, servesA)
	}
	if _, err := c.GetIndex(t.Context(), alias+"-r1"); !opensearch.IsNotFound(err) {
		t.Errorf("the index kept after (a) outlived its replacement by (b) under deletionPolicy Delete: %v", err)
	}

	// (c) a change the gate refuses: m 4, efSearch 2.
	e.update(vi, func() {
		vi.Spec.Fields[0].Method.Parameters = &v1alpha1.MethodParameters{M: ptr.To[int32](4), EfConstruction: ptr.To[int32](8), EfSearch: ptr.To[int32](2)}
	})
	rb = waitRebuild(v1alpha1.RebuildGateFailed)
	report("faiss m 4, efSearch 2 (refused)", rb)
	if got := liveIndex(t, c, alias).Name; got != servesB {
		t.Errorf("after a failed gate %s resolves to %s, want %s still", alias, got, servesB)
	}
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionRebuildGateFailed, metav1.ConditionTrue, v1alpha1.ReasonRebuildGateFailed, 30*time.Second)
	if c := meta.FindStatusCondition(vi.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRebuildGateFailed {
		t.Errorf("after a failed gate Degraded is %+v, want True RebuildGateFailed", c)
	}
	e.waitEvent(vi.Name, v1alpha1.ReasonRebuildGateFailed)

	// (d) back to (a)'s spec: the index (a) built, kept since (b), serves again.
	e.update(vi, func() {
		vi.Spec.Fields[0].Engine = "lucene"
		vi.Spec.Fields[0].Method.Parameters = &v1alpha1.MethodParameters{M: ptr.To[int32](32), EfConstruction: ptr.To[int32](64)}
	})
	rb = waitRebuild(v1alpha1.RebuildSucceeded)
	report("rollback to (a)", rb)
	if !rb.ReusedPrevious || rb.Target != servesA || liveIndex(t, c, alias).Name != servesA {
		t.Errorf("rollback: status.rebuild %+v, alias on %s; want %s reused", rb, liveIndex(t, c, alias).Name, servesA)
	}
	e.waitIndexReady(vi)

	load.halt()
	t.Logf("queries: %d, %d failed, %d with no hit", load.queries.Load(), load.failedQueries.Load(), load.emptyQueries.Load())
	if load.failedQueries.Load() > 0 || load.emptyQueries.Load() > 0 {
		t.Errorf("%d queries failed (%q), %d found nothing", load.failedQueries.Load(), load.failures, load.emptyQueries.Load())
	}
	load.verify(t)

	// Deleting the object applies deletionPolicy Delete to every index it made: the serving
	// one behind the alias and the one kept for a rollback.
	kept := vi.Status.PreviousIndex
	if err := e.k8s.Delete(e.ctx, vi); err != nil {
		t.Fatal(err)
	}
	e.eventually(time.Minute, func() (bool, string) {
		err := e.k8s.Get(e.ctx, clientKey(vi), vi)
		return err != nil, "VectorIndex still there"
	})
	for _, name := range []string{alias, servesA, servesB, kept.Name} {
		if _, err := c.GetIndex(t.Context(), name); !opensearch.IsNotFound(err) {
			t.Errorf("after deletion (policy Delete) %s still resolves: %v", name, err)
		}
	}
}

func gateText(results []v1alpha1.RebuildGateResult) string {
	parts := make([]string, 0, len(results))
	for _, g := range results {
		parts = append(parts, fmt.Sprintf("recall@%d %s vs %s, p90 %sms vs %sms, passed %v", g.K, g.TargetRecall, g.SourceRecall, g.TargetP90Ms, g.SourceP90Ms, g.Passed))
	}
	return strings.Join(parts, "; ")
}

func deref(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

// TestAliasLessIndexAdoptsTheSchemeOnItsFirstRebuild: an index created without a rebuild
// strategy has no alias; setting BlueGreen with a build change rebuilds it, and the swap
// turns its name into the alias — the index itself kept as a write-blocked clone, which a
// revert of the spec rolls back onto. A writer runs throughout; every acknowledged write is
// found after.
func TestAliasLessIndexAdoptsTheSchemeOnItsFirstRebuild(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	c := osClient(t, url)
	e.cluster("vectors", url)
	const docs, dim = 5000, 8
	vi := indexOf(e, "adopt", v1alpha1.VectorField{Name: "embedding", Dimension: dim,
		Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](16)}}})
	e.create(vi)
	e.waitIndexReady(vi)
	name := vi.Spec.IndexName
	if got := liveIndex(t, c, name); got.Name != name || len(got.Aliases) != 0 {
		t.Fatalf("without a rebuild strategy the index is %s with aliases %v, want the concrete %s", got.Name, got.Aliases, name)
	}
	base, _ := dataset.Generate(dataset.Spec{Count: docs, Queries: 1, Dim: dim, Clusters: 1, Spread: 1, Seed: 43})
	ingest(t, c, name, base)
	load := startLiveLoad(t, c, name, dim, docs)

	wait := func() *v1alpha1.RebuildStatus {
		t.Helper()
		return e.waitRebuild(vi, 3*time.Minute, ended(vi, v1alpha1.RebuildSucceeded))
	}
	e.update(vi, func() {
		vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen, Gate: v1alpha1.RebuildGate{MinRecall: "0.8", MaxLatencyRegressionPercent: 300, K: 10, SampleSize: 20}}
		vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](32)
	})
	rb := wait()
	t.Logf("adoption: %s → %s in %d passes; writes refused for %sms (%s)", rb.Source, rb.Target, rb.Passes, deref(rb.WriteBlockedMillis), rb.Message)
	clone := name + "-r0"
	live := liveIndex(t, c, name)
	if live.Name != rb.Target || !slices.Contains(live.Aliases, name) || vi.Status.Alias != name {
		t.Errorf("after the first rebuild %s resolves to %s (aliases %v, status.alias %q), want the alias of %s", name, live.Name, live.Aliases, vi.Status.Alias, rb.Target)
	}
	kept := liveIndex(t, c, clone)
	if kept.Settings["index.blocks.write"] != "true" || vi.Status.PreviousIndex == nil || vi.Status.PreviousIndex.Name != clone {
		t.Errorf("the alias-less index kept as %s: write block %q, status.previousIndex %+v", clone, kept.Settings["index.blocks.write"], vi.Status.PreviousIndex)
	}

	// Reverting the spec rolls back onto the clone.
	e.update(vi, func() { vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](16) })
	rb = wait()
	if !rb.ReusedPrevious || liveIndex(t, c, name).Name != clone {
		t.Errorf("revert: status.rebuild %+v, %s on %s; want the clone %s reused", rb, name, liveIndex(t, c, name).Name, clone)
	}
	load.halt()
	// Only the first swap deletes an index clients may be searching (the alias takes its
	// name): a search in flight on it at that instant can fail. Every later swap keeps the
	// index it leaves.
	t.Logf("queries: %d, %d failed %q", load.queries.Load(), load.failedQueries.Load(), load.failures)
	load.verify(t)
}

// TestRebuildSurvivesANodeRestartMidCopy: the node restarts while the copy runs, so its
// _reindex task is lost with it (OpenSearch keeps only completed tasks' results); the
// operator starts the pass again from the same sequence numbers and the rebuild completes
// with every document.
func TestRebuildSurvivesANodeRestartMidCopy(t *testing.T) {
	e := startOperator(t)
	node, err := devenv.StartNode(testsupport.Root(t), "ctl-rebuild-restart", devenv.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	c := osClient(t, node.URL)
	e.cluster("vectors", node.URL)
	const docs, dim = 20000, 8
	vi := indexOf(e, "restart", v1alpha1.VectorField{Name: "embedding", Dimension: dim,
		Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](8)}}})
	vi.Spec.Replicas = 0
	vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen, MaxDocsPerSecond: ptr.To[int32](1000),
		Gate: v1alpha1.RebuildGate{MinRecall: "0.8", MaxLatencyRegressionPercent: 300, K: 10, SampleSize: 20}}
	e.create(vi)
	e.waitIndexReady(vi)
	base, _ := dataset.Generate(dataset.Spec{Count: docs, Queries: 1, Dim: dim, Clusters: 1, Spread: 1, Seed: 47})
	ingest(t, c, vi.Spec.IndexName, base)

	e.update(vi, func() { vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](16) })
	lost := slices.Clone(e.waitRebuild(vi, time.Minute, copying).Tasks)
	t.Logf("restarting the node at %d of %d documents copied (tasks %v)", vi.Status.Rebuild.DocumentsCopied, vi.Status.Rebuild.DocumentsTotal, lost)
	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := devenv.StartNode(testsupport.Root(t), "ctl-rebuild-restart", devenv.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := e.waitRebuild(vi, 3*time.Minute, ended(vi, v1alpha1.RebuildSucceeded))
	if slices.Equal(rb.Tasks, lost) {
		t.Errorf("the rebuild still follows the tasks lost with the node: %v", lost)
	}
	if err := c.Refresh(t.Context(), vi.Spec.IndexName); err != nil {
		t.Fatal(err)
	}
	n, err := c.DocCount(t.Context(), vi.Spec.IndexName)
	if err != nil {
		t.Fatal(err)
	}
	if served := liveIndex(t, c, vi.Spec.IndexName).Name; served != rb.Target || n != docs {
		t.Errorf("after the restart %s serves %s with %d documents, want %s with %d", vi.Spec.IndexName, served, n, rb.Target, docs)
	}
	t.Logf("rebuilt through the restart: %s → %s in %d passes", rb.Source, rb.Target, rb.Passes)
}

// TestRebuildUnderSegmentReplicationCopiesEveryWrite: on a two-node cluster whose indexes
// use segment replication (as every index of a remote-backed cluster does), a refresh
// reaches the primaries only and the replicas copy its segments later, while the copy's
// _reindex and the cut-over's counts search any copy. Replication is throttled so the
// replicas lag as they do under load on a real network; a writer runs throughout, and
// every acknowledged write must be in the rebuilt index.
func TestRebuildUnderSegmentReplicationCopiesEveryWrite(t *testing.T) {
	e := startOperator(t)
	members := []string{"ctl-segrep-a", "ctl-segrep-b"}
	var url string
	for _, m := range members {
		node, err := devenv.StartNode(testsupport.Root(t), m, devenv.NodeOptions{Cluster: members,
			// Segment copies at 200 KB/s: replicas a refresh or more behind the primaries.
			ExtraConfig: "cluster.indices.replication.strategy: SEGMENT\nindices.replication.max_bytes_per_sec: 200kb\n"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = node.Destroy() })
		url = cmp.Or(url, node.URL)
	}
	c := osClient(t, url)
	e.cluster("vectors", url)
	const docs, dim = 5000, 8
	vi := indexOf(e, "segrep", v1alpha1.VectorField{Name: "embedding", Dimension: dim,
		Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](8)}}})
	vi.Spec.Replicas = 1
	vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen,
		Gate: v1alpha1.RebuildGate{MinRecall: "0.8", MaxLatencyRegressionPercent: 300, K: 10, SampleSize: 20}}
	e.create(vi)
	e.waitIndexReady(vi)
	if got := liveIndex(t, c, vi.Spec.IndexName).Settings["index.replication.type"]; got != "SEGMENT" {
		t.Fatalf("index.replication.type %q, want SEGMENT", got)
	}
	base, _ := dataset.Generate(dataset.Spec{Count: docs, Queries: 1, Dim: dim, Clusters: 1, Spread: 1, Seed: 59})
	ingest(t, c, vi.Spec.IndexName, base)
	load := startLiveLoad(t, c, vi.Spec.IndexName, dim, docs)
	e.update(vi, func() { vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](16) })
	rb := e.waitRebuild(vi, 5*time.Minute, func(rb *v1alpha1.RebuildStatus) bool {
		return rb.ObservedGeneration == vi.Generation && slices.Contains([]string{v1alpha1.RebuildSucceeded, v1alpha1.RebuildFailed, v1alpha1.RebuildGateFailed}, rb.Phase)
	})
	load.halt()
	if rb.Phase != v1alpha1.RebuildSucceeded {
		t.Fatalf("the rebuild ended %s: %s", rb.Phase, rb.Message)
	}
	t.Logf("%s → %s in %d passes; writes refused for %sms (%s)", rb.Source, rb.Target, rb.Passes, deref(rb.WriteBlockedMillis), rb.Message)
	load.verify(t)
}

// copyingRebuild is a BlueGreen index of docs 8-d vectors whose m 8 → 16 rebuild is
// copying (throttled to 1,000 documents/s) when it returns.
func copyingRebuild(t *testing.T, name string, docs int, seed uint64) (*env, *opensearch.Client, *v1alpha1.VectorIndex) {
	t.Helper()
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	c := osClient(t, url)
	e.cluster("vectors", url)
	vi := indexOf(e, name, v1alpha1.VectorField{Name: "embedding", Dimension: 8,
		Method: v1alpha1.VectorMethod{Name: "hnsw", Parameters: &v1alpha1.MethodParameters{M: ptr.To[int32](8)}}})
	vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen, MaxDocsPerSecond: ptr.To[int32](1000)}
	e.create(vi)
	e.waitIndexReady(vi)
	base, _ := dataset.Generate(dataset.Spec{Count: docs, Queries: 1, Dim: 8, Clusters: 1, Spread: 1, Seed: seed})
	ingest(t, c, vi.Spec.IndexName, base)
	e.update(vi, func() { vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](16) })
	e.waitRebuild(vi, time.Minute, copying)
	return e, c, vi
}

// TestDeletingAnIndexMidRebuildLeavesNothingBehind: a VectorIndex deleted (deletionPolicy
// Delete) while its rebuild copies: the copy is cancelled before its target is deleted, so
// no running _reindex creates the target again (OpenSearch auto-creates a missing bulk
// target, with a dynamic mapping), and nothing named after the index is left.
func TestDeletingAnIndexMidRebuildLeavesNothingBehind(t *testing.T) {
	waitsMostly(t)
	e, c, vi := copyingRebuild(t, "gone", 20000, 53)
	target := vi.Status.Rebuild.Target
	if err := e.k8s.Delete(e.ctx, vi); err != nil {
		t.Fatal(err)
	}
	e.eventually(time.Minute, func() (bool, string) {
		return e.k8s.Get(e.ctx, clientKey(vi), vi) != nil, "VectorIndex still there"
	})
	time.Sleep(3 * time.Second) // a copy still running would have written into the target by now
	for _, name := range []string{vi.Spec.IndexName, vi.Spec.IndexName + "-r1", target} {
		if _, err := c.GetIndex(t.Context(), name); !opensearch.IsNotFound(err) {
			t.Errorf("after deletion mid-rebuild %s still resolves: %v", name, err)
		}
	}
	running, err := c.RunningReindexes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range running {
		if strings.Contains(task.Description, vi.Spec.IndexName) {
			t.Errorf("a copy still runs after the deletion: %s", task.Description)
		}
	}
}

// TestRemovingTheStrategyMidRebuildLetsItFinish: spec.rebuild removed while its rebuild
// copies (the strategy only decides whether a change is accepted): the rebuild finishes
// with the schema's gate, and the next build change is refused at admission.
func TestRemovingTheStrategyMidRebuildLetsItFinish(t *testing.T) {
	waitsMostly(t)
	e, _, vi := copyingRebuild(t, "unset", 5000, 59)
	e.update(vi, func() { vi.Spec.Rebuild = nil })
	rb := e.waitRebuild(vi, 2*time.Minute, func(rb *v1alpha1.RebuildStatus) bool { return rb.Phase == v1alpha1.RebuildSucceeded })
	if len(rb.Gate) != 1 || rb.Gate[0].Sample != 100 || rb.Gate[0].K != 10 {
		t.Errorf("gate without spec.rebuild: %+v, want the schema's (100 queries, k 10)", rb.Gate)
	}
	e.waitIndexReady(vi)
	if err := e.tryUpdate(vi, func() { vi.Spec.Fields[0].Method.Parameters.M = ptr.To[int32](24) }); err == nil || !strings.Contains(err.Error(), "method.parameters.m is immutable unless spec.rebuild.strategy is BlueGreen") {
		t.Errorf("a build change without the strategy: %v, want refused", err)
	}
}

// TestRebuildCarriesOtherBuildChanges: a rebuild for each other kind of build change — the
// shard count, the space, and the mode with compression (float in memory → 8x on disk) —
// ends with the alias on an index that has it and every document.
func TestRebuildCarriesOtherBuildChanges(t *testing.T) {
	waitsMostly(t)
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	c := osClient(t, url)
	e.cluster("vectors", url)
	const docs = 3000
	vi := indexOf(e, "other", v1alpha1.VectorField{Name: "embedding", Dimension: 16})
	vi.Spec.Rebuild = &v1alpha1.RebuildSpec{Strategy: v1alpha1.RebuildBlueGreen, Gate: v1alpha1.RebuildGate{MinRecall: "0.5", MaxLatencyRegressionPercent: 1000, K: 10, SampleSize: 20}}
	e.create(vi)
	e.waitIndexReady(vi)
	base, _ := dataset.Generate(dataset.Spec{Count: docs, Queries: 1, Dim: 16, Clusters: 1, Spread: 1, Seed: 61})
	ingest(t, c, vi.Spec.IndexName, base)
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.VectorIndexSpec)
		check  func(*opensearch.Index) string
	}{
		{"shards 1 → 3", func(s *v1alpha1.VectorIndexSpec) { s.Shards = 3 },
			func(idx *opensearch.Index) string { return idx.Settings["index.number_of_shards"] }},
		{"l2 → innerproduct", func(s *v1alpha1.VectorIndexSpec) { s.Fields[0].SpaceType = "innerproduct" },
			func(idx *opensearch.Index) string {
				return fmt.Sprint(property(t, idx, "embedding")["method"].(map[string]any)["space_type"])
			}},
		{"in_memory → on_disk 8x", func(s *v1alpha1.VectorIndexSpec) { s.Fields[0].Mode, s.Fields[0].CompressionLevel = "on_disk", "8x" },
			func(idx *opensearch.Index) string {
				p := property(t, idx, "embedding")
				return fmt.Sprint(p["mode"], " ", p["compression_level"])
			}},
	} {
		e.update(vi, func() { tc.change(&vi.Spec) })
		rb := e.waitRebuild(vi, 2*time.Minute, ended(vi, v1alpha1.RebuildSucceeded))
		live := liveIndex(t, c, vi.Spec.IndexName)
		n, err := c.DocCount(t.Context(), vi.Spec.IndexName)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s → %s, gate %s, serving index has %s, %d documents", tc.name, rb.Source, rb.Target, gateText(rb.Gate), tc.check(live), n)
		if live.Name != rb.Target || n != docs {
			t.Errorf("%s: %s serves %s with %d documents, want %s with %d", tc.name, vi.Spec.IndexName, live.Name, n, rb.Target, docs)
		}
	}
	if got := liveIndex(t, c, vi.Spec.IndexName); got.Settings["index.number_of_shards"] != "3" ||
		fmt.Sprint(property(t, got, "embedding")["method"].(map[string]any)["space_type"]) != "innerproduct" {
		t.Errorf("the last index lost an earlier change: shards %s, method %v", got.Settings["index.number_of_shards"], property(t, got, "embedding")["method"])
	}
}
