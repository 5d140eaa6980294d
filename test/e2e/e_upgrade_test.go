package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/internal/testsupport"
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
// its copies was down, the elected cluster manager handed over): every acknowledged write
// is found after, the elected cluster manager goes last, the nodes report the new version,
// status.version, the k-NN plugin version and newestNodeVersion follow, and the top 10 of
// 50 fixed queries are the same before and after.
func TestVersionUpgradeUnderLoad(t *testing.T) {
	integration(t)
	ctx := context.Background()
	sc := sandboxCluster(t)
	from, to := sandbox.UpgradeFromVersion, sandbox.OpenSearchVersion
	if sc.Status.Version != from {
		t.Fatalf("the sandbox cluster runs %q, want %s to upgrade from", sc.Status.Version, from)
	}
	base := clientServiceURL(t, sc)
	waitGreen(t, sc, base, 5*time.Minute)
	queries := fixedQueries(50)
	wantTop := topTens(t, base, "docs-v1", queries)
	elected := strings.TrimSpace(get(t, base+"/_cat/cluster_manager?h=node"))

	writes := startWriter(t, base, "upgrade-writes")
	versions := watchVersions(base)
	started := time.Now()
	seen := rollUnderLoad(t, sc, func() {
		sc.Spec.Managed.Version = to
		sc.Spec.Managed.Image = sandbox.OpenSearchImageOf(to)
	}, killOperatorMidway(t))
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
	gotTop := topTens(t, base, "docs-v1", queries)
	for i := range queries {
		if !slices.Equal(gotTop[i], wantTop[i]) {
			t.Errorf("query %d: top 10 %v after the upgrade, %v before", i, gotTop[i], wantTop[i])
		}
	}
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
	events        []string
	// mixedFrom and mixedTo are the first and last samples with nodes of two versions.
	mixedFrom, mixedTo time.Time
}

func watchVersions(base string) *versionWatch {
	w := &versionWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		last := map[string]string{}
		for {
			if out, err := sandbox.Get(base + "/_cat/nodes?h=name,version"); err == nil {
				now := time.Now()
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
