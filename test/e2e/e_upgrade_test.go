package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/test/sandbox"
)

// writeRate is the most documents a second the upgrade's writer indexes, one at a time.
const writeRate = 10

// TestVersionUpgradeUnderLoad: the sandbox cluster, created at sandbox.UpgradeFromVersion,
// is upgraded to sandbox.OpenSearchVersion (spec.managed.version and the image) while the
// load loop queries through the client Service and a writer indexes documents, and the
// operator's pod is force-deleted once the first node runs the new version: its successor
// takes the upgrade over halfway, from what the cluster and the status say. Besides
// rollUnderLoad's guarantees (no failed query, never red, no pod stopped while a holder of
// its copies was down, the elected cluster manager handed over), upgradeUnderLoad's.
func TestVersionUpgradeUnderLoad(t *testing.T) {
	integration(t)
	sc := sandboxCluster(t)
	from, to := sandbox.UpgradeFromVersion, sandbox.OpenSearchVersion
	if sc.Status.Version != from {
		t.Fatalf("the sandbox cluster runs %q, want %s to upgrade from", sc.Status.Version, from)
	}
	base := clientServiceURL(t, sc)
	waitGreen(t, sc, base, 5*time.Minute)
	failedStartSetBack(t, sc, base, from, to)
	before, after := upgradeUnderLoad(t, sc, base, from, to, killOperatorMidway(t))
	for i := range before {
		if !slices.Equal(after[i], before[i]) {
			t.Errorf("query %d: top 10 %v after the upgrade, %v before", i, after[i], before[i])
		}
	}
}

// upgradeUnderLoad upgrades sc from version `from` to `to` (spec.managed.version and the
// image) by rollUnderLoad, with midway, while a writer indexes documents, and checks: every
// acknowledged write is found after, the elected cluster manager goes last, the nodes report
// the new version, status.version, the k-NN plugin version and newestNodeVersion follow,
// and going back is refused. It returns the top 10 of 50 fixed queries before and after.
func upgradeUnderLoad(t *testing.T, sc *v1alpha1.SearchCluster, base, from, to string, midway func(restarted int) bool) (before, after [][]string) {
	t.Helper()
	ctx := context.Background()
	queries := fixedQueries(50)
	before = topTens(t, base, "docs-v1", queries)
	elected := strings.TrimSpace(get(t, base+"/_cat/cluster_manager?h=node"))

	writes := startWriter(t, base, "upgrade-writes")
	versions := watchVersions(base)
	started := time.Now()
	seen := rollUnderLoad(t, sc, func() {
		sc.Spec.Managed.Version = to
		sc.Spec.Managed.Image = sandbox.OpenSearchImageOf(to)
	}, midway, acrossMajors(from, to, versions))
	took := time.Since(started)
	acked, failed, errs := writes.stop()
	events, mixed := versions.stop()
	t.Logf("node versions:\n%s", strings.Join(events, "\n"))

	found := idsFound(t, base, "upgrade-writes", acked)
	total := count(t, base, "upgrade-writes")
	t.Logf("upgrade %s → %s took %s (20 s of load either side); order %v (elected before: %s); mixed versions for %s; writes: %d acknowledged, %d found of them, %d failed %v, %d documents in the index",
		from, to, took.Round(time.Second), seen.deleted, elected, mixed.Round(time.Second), len(acked), found, failed, errs, total)
	if found != len(acked) {
		t.Errorf("%d of %d acknowledged writes lost", len(acked)-found, len(acked))
	}
	if len(seen.deleted) == 0 || seen.deleted[len(seen.deleted)-1] != elected {
		t.Errorf("upgraded in the order %v: the elected cluster manager %s was not last", seen.deleted, elected)
	}
	for _, line := range strings.Split(strings.TrimSpace(get(t, base+"/_cat/nodes?h=name,version")), "\n") {
		if f := strings.Fields(line); len(f) != 2 || f[1] != to {
			t.Errorf("after the upgrade _cat/nodes says %q, want every node at %s", line, to)
		}
	}
	waitFor(t, time.Minute, "status to report the new version", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err.Error()
		}
		return sc.Status.Version == to && sc.Status.KNNPluginVersion == to+".0" && sc.Status.NewestNodeVersion == to,
			fmt.Sprintf("status.version %q, knnPluginVersion %q, newestNodeVersion %q", sc.Status.Version, sc.Status.KNNPluginVersion, sc.Status.NewestNodeVersion)
	})
	after = topTens(t, base, "docs-v1", queries)
	// Every node has run the new version now: going back is refused, with why.
	back := sc.DeepCopy()
	err := tryUpdate(back, func() { back.Spec.Managed.Version, back.Spec.Managed.Image = from, sandbox.OpenSearchImageOf(from) })
	if err == nil || !strings.Contains(err.Error(), "cannot go below a version a node of the cluster has run") {
		t.Errorf("setting the version back to %s after the upgrade: %v, want it refused naming status.newestNodeVersion", from, err)
	}
	return before, after
}

// acrossMajors is what an upgrade from one major to the next is known to fail of queries,
// nil within a major. The k-NN plugin gates fields of its query on the cluster's lowest
// node version (3.0 added some), which nodes learn at different moments when the last node
// of the old version leaves: a shard then reads a query written for the other view and
// fails ("unexpected byte"), and the search's retry on another copy may land on the node
// that is leaving (weighted routing fails open to it: "node_not_connected"). Both are
// excused in the seconds around that moment only.
func acrossMajors(from, to string, versions *versionWatch) *knownFailure {
	if major, _, _ := strings.Cut(from, "."); strings.HasPrefix(to, major+".") {
		return nil
	}
	return &knownFailure{
		tracked: "opensearch-project/k-NN#1622 (fix: k-NN#3423, open)",
		matches: func(f failedQuery) bool {
			_, last := versions.mixedWindow()
			return (strings.Contains(f.err, "unexpected byte") || strings.Contains(f.err, "node_not_connected_exception")) &&
				f.sent.After(last.Add(-20*time.Second)) && f.sent.Before(last.Add(15*time.Second))
		},
	}
}

// badJVMOption is an option the JVM refuses to start with.
const badJVMOption = "-XX:+VectorpilotNoSuchOption"

// failedStartSetBack: an upgrade to `to` whose change also carries a JVM option the JVM
// refuses, under query load. The first pod restarted onto it cannot start; the cluster
// says so (Degraded, PodsFailing, naming the pod and what the JVM said, and that the
// version may go back) with a Warning Event, no other pod restarts, no query fails. Setting
// the change back (version `from`, no option) restarts that pod alone onto `from` and the
// cluster is green and Ready with every node at `from`, as before.
func failedStartSetBack(t *testing.T, sc *v1alpha1.SearchCluster, base, from, to string) {
	ctx := context.Background()
	before := podUIDs(t, sc)
	jvm := sc.Spec.Managed.NodePools[0].JVM.DeepCopy()
	load := startLoad(t, base, "docs-v1", "failed start")
	started := time.Now()
	update(t, sc, func() {
		sc.Spec.Managed.Version, sc.Spec.Managed.Image = to, sandbox.OpenSearchImageOf(to)
		pool := &sc.Spec.Managed.NodePools[0]
		if pool.JVM == nil {
			pool.JVM = &v1alpha1.JVMOptions{}
		}
		pool.JVM.ExtraOptions = append(pool.JVM.ExtraOptions, badJVMOption)
	})
	var failing *metav1.Condition
	waitFor(t, 5*time.Minute, "the first pod restarted onto a bad JVM option to be reported failing", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err.Error()
		}
		failing = meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionDegraded)
		return failing != nil && failing.Status == metav1.ConditionTrue && failing.Reason == v1alpha1.ReasonPodsFailing, fmt.Sprintf("Degraded %+v", failing)
	})
	reported := time.Since(started)
	for _, want := range []string{"Unrecognized VM option 'VectorpilotNoSuchOption'", "spec.managed.version may go back to " + from} {
		if !strings.Contains(failing.Message, want) {
			t.Errorf("PodsFailing says %q, want it to say %q", failing.Message, want)
		}
	}
	// Held: the kubelet restarts the container twice more while the other pods wait.
	time.Sleep(30 * time.Second)
	restarted := changedPods(before, podUIDs(t, sc))
	if len(restarted) != 1 {
		t.Fatalf("pods restarted onto the failing change: %v, want the first one only", restarted)
	}
	var events corev1.EventList
	if err := k8s.List(ctx, &events, client.InNamespace(sc.Namespace), client.MatchingFields{"involvedObject.name": sc.Name}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.Reason == v1alpha1.ReasonPodsFailing && e.Type == corev1.EventTypeWarning
	}) {
		t.Errorf("no Warning Event %s on the cluster", v1alpha1.ReasonPodsFailing)
	}

	update(t, sc, func() {
		sc.Spec.Managed.Version, sc.Spec.Managed.Image = from, sandbox.OpenSearchImageOf(from)
		sc.Spec.Managed.NodePools[0].JVM = jvm
	})
	setBack := time.Now()
	waitFor(t, 5*time.Minute, "the failed pod back on "+from+" and the cluster Ready and green", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err.Error()
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation && sc.Status.Health == "green" && sc.Status.Rollout == nil,
			fmt.Sprintf("Ready %+v, health %s, rollout %+v", ready, sc.Status.Health, sc.Status.Rollout)
	})
	recovered := time.Since(setBack)
	phases := load.stop()
	if again := changedPods(before, podUIDs(t, sc)); !slices.Equal(again, restarted) {
		t.Errorf("pods restarted by the set-back: %v, want only %v", again, restarted)
	}
	for _, line := range strings.Split(strings.TrimSpace(get(t, base+"/_cat/nodes?h=name,version")), "\n") {
		if f := strings.Fields(line); len(f) != 2 || f[1] != from {
			t.Errorf("after the set-back _cat/nodes says %q, want every node at %s", line, from)
		}
	}
	if sc.Status.NewestNodeVersion != from {
		t.Errorf("status.newestNodeVersion is %q after a failed start, want %s: no node ran %s", sc.Status.NewestNodeVersion, from, to)
	}
	p := phases[0]
	t.Logf("failed start: %s reported PodsFailing after %s (%q); set back to %s, Ready and green after %s; %d queries, %d failed, p99 %s %v",
		restarted[0], reported.Round(time.Second), failing.Message, from, recovered.Round(time.Second), p.total, len(p.failures), ms(p.latency.ValueAtQuantile(99)), p.failures[:min(5, len(p.failures))])
	if len(p.failures) > 0 {
		t.Errorf("%d of %d queries failed during the failed start and its set-back: %v", len(p.failures), p.total, p.failures[:min(5, len(p.failures))])
	}
}

// changedPods are the names whose pod is not the one before (deleted, or recreated).
func changedPods(before, now map[string]string) []string {
	var out []string
	for name, uid := range before {
		if now[name] != uid {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// writer indexes numbered documents into an index of its own, one at a time, and keeps the
// IDs OpenSearch acknowledged (201 Created). Its fields are read after stop, which waits for
// its goroutine.
type writer struct {
	done, stopped chan struct{}
	acked         []string
	failed        int
	errors        []string
}

func startWriter(t *testing.T, base, index string) *writer {
	t.Helper()
	testsupport.Send(t, http.MethodPut, base+"/"+index, `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	t.Cleanup(func() { testsupport.Send(t, http.MethodDelete, base+"/"+index, "") })
	w := &writer{done: make(chan struct{}), stopped: make(chan struct{})}
	c := &http.Client{Timeout: 30 * time.Second}
	go func() {
		defer close(w.stopped)
		tick := time.NewTicker(time.Second / writeRate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			id := fmt.Sprintf("w-%d", i)
			err := create(c, base+"/"+index+"/_create/"+id, fmt.Sprintf(`{"n":%d}`, i))
			if err == nil {
				w.acked = append(w.acked, id)
				continue
			}
			w.failed++
			if len(w.errors) < 5 {
				w.errors = append(w.errors, fmt.Sprintf("%s: %v", id, err))
			}
		}
	}()
	return w
}

// create indexes one document, an error unless OpenSearch answers 201 Created.
func create(c *http.Client, url, doc string) error {
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(doc))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

func (w *writer) stop() (acked []string, failed int, errors []string) {
	close(w.done)
	<-w.stopped
	return w.acked, w.failed, w.errors
}

// idsFound is how many of ids the index holds, after a refresh.
func idsFound(t *testing.T, base, index string, ids []string) int {
	t.Helper()
	testsupport.Send(t, http.MethodPost, base+"/"+index+"/_refresh", "")
	body, err := json.Marshal(map[string]any{"query": map[string]any{"ids": map[string]any{"values": ids}}})
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(testsupport.Send(t, http.MethodPost, base+"/"+index+"/_count", string(body))), &answer); err != nil {
		t.Fatal(err)
	}
	return answer.Count
}

// versionWatch samples the version each node reports (_cat/nodes) every second.
type versionWatch struct {
	done, stopped chan struct{}
	mu            sync.Mutex
	events        []string
	// mixedFrom and mixedTo are the first and last samples with nodes of two versions.
	mixedFrom, mixedTo time.Time
}

// mixedWindow is when nodes of two versions were seen together, so far.
func (w *versionWatch) mixedWindow() (from, to time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mixedFrom, w.mixedTo
}

func watchVersions(base string) *versionWatch {
	w := &versionWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		last := map[string]string{}
		for {
			if out, err := sandbox.Get(base + "/_cat/nodes?h=name,version"); err == nil {
				now := time.Now()
				w.mu.Lock()
				distinct := map[string]bool{}
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					f := strings.Fields(line)
					if len(f) != 2 {
						continue
					}
					distinct[f[1]] = true
					if last[f[0]] != f[1] {
						last[f[0]] = f[1]
						w.events = append(w.events, fmt.Sprintf("%s %s runs %s", now.Format(time.TimeOnly), f[0], f[1]))
					}
				}
				if len(distinct) > 1 {
					if w.mixedFrom.IsZero() {
						w.mixedFrom = now
					}
					w.mixedTo = now
				}
				w.mu.Unlock()
			}
			select {
			case <-w.done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return w
}

// stop ends the sampling: the changes seen, and how long nodes of two versions were seen
// together.
func (w *versionWatch) stop() ([]string, time.Duration) {
	close(w.done)
	<-w.stopped
	return w.events, w.mixedTo.Sub(w.mixedFrom)
}
