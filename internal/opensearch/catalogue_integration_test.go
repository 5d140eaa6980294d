package opensearch_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.OpenSearch)) }

// TestCatalogueSeesEveryChange: on a real node the catalogue's figures are Stats', its
// version moves with every kind of change the operator or a user makes to an index
// (settings, _meta, a write block, an alias) and stays put while documents are written,
// and callers share one reading until they ask for a newer one.
func TestCatalogueSeesEveryChange(t *testing.T) {
	var sent atomic.Int64
	c, err := opensearch.New(opensearch.Config{Endpoint: testsupport.OpenSearchURL(t), OnRequest: func(opensearch.SentRequest) { sent.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	name := fmt.Sprintf("catalogue-%d", time.Now().UnixNano())
	if err := c.CreateIndex(ctx, name, map[string]any{"index.number_of_shards": 2, "index.number_of_replicas": 0},
		map[string]any{"v": map[string]any{"type": "keyword"}}, map[string]any{"owner": "a"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteIndex(context.Background(), name) })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if s, err := c.Stats(ctx, name); err == nil && s.Health == "green" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%s not green within a minute: %+v, %v", name, s, err)
		}
	}
	write := func(values ...string) {
		t.Helper()
		var ndjson []byte
		for _, v := range values {
			ndjson = fmt.Appendf(ndjson, "{\"index\":{\"_index\":%q}}\n{\"v\":%q}\n", name, v)
		}
		if err := c.Bulk(ctx, ndjson); err != nil {
			t.Fatal(err)
		}
	}
	write("x", "y", "z")
	if err := c.Refresh(ctx, name); err != nil {
		t.Fatal(err)
	}
	// read is a catalogue begun now, and the index's entry in it.
	read := func(step string) (*opensearch.Catalogue, opensearch.CatalogueEntry) {
		t.Helper()
		cat, err := c.Catalogue(ctx, time.Now(), time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		e, ok := cat.Lookup(name)
		if !ok {
			t.Fatalf("%s: %s not in the catalogue", step, name)
		}
		return cat, e
	}

	_, first := read("created")
	live, err := c.GetIndex(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := c.Stats(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if first.UUID != live.UUID || first.Version <= 0 || first.Stats == nil || *first.Stats != stats || stats.DocsCount != 3 || stats.ActivePrimaries != 2 {
		t.Fatalf("entry %+v (stats %+v), want uuid %s, a version and the figures of Stats %+v", first, first.Stats, live.UUID, stats)
	}

	// Documents are not metadata: the version stays.
	write("w")
	if _, e := read("documents written"); e.Version != first.Version {
		t.Errorf("documents written: version %d → %d, want it unchanged", first.Version, e.Version)
	}
	version := first.Version
	for _, change := range []struct {
		name string
		do   func() error
	}{
		{"a dynamic setting", func() error { return c.PutSettings(ctx, name, map[string]any{"index.refresh_interval": "5s"}) }},
		{"the mapping's _meta", func() error { return c.PutMeta(ctx, name, map[string]any{"owner": "b"}) }},
		{"a new field", func() error {
			return c.PutMapping(ctx, name, map[string]any{"w": map[string]any{"type": "keyword"}})
		}},
		{"a write block", func() error { return c.SetWriteBlock(ctx, name, true) }},
		{"the write block lifted", func() error { return c.SetWriteBlock(ctx, name, false) }},
		{"an alias", func() error { return c.UpdateAliases(ctx, opensearch.AddAlias(name, name+"-alias")) }},
	} {
		if err := change.do(); err != nil {
			t.Fatalf("%s: %v", change.name, err)
		}
		_, e := read(change.name)
		if e.Version <= version {
			t.Errorf("%s: version %d, want above %d", change.name, e.Version, version)
		}
		version = e.Version
	}
	cat, _ := read("aliased")
	if e, ok := cat.Lookup(name + "-alias"); !ok || e.Name != name {
		t.Errorf("the alias looks up %+v (%v), want index %s", e, ok, name)
	}

	// Callers content with a reading begun before now share the last one; those that are
	// not share one new reading.
	before := sent.Load()
	again, err := c.Catalogue(ctx, cat.ReadAt.Add(-time.Second), time.Minute)
	if err != nil || again != cat || sent.Load() != before {
		t.Errorf("an older reading asked for: %v, same %v, %d requests; want the last one and none", err, again == cat, sent.Load()-before)
	}
	since := time.Now()
	var wg sync.WaitGroup
	got := make([]*opensearch.Catalogue, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = c.Catalogue(ctx, since, time.Minute)
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g == nil || !g.ReadAt.After(since) || g != got[0] {
			t.Fatalf("caller %d of 8 got %v, want one shared reading begun after the call", i, g)
		}
	}
	if n := sent.Load() - before; n != 3 {
		t.Errorf("8 callers at once sent %d requests, want one reading (3)", n)
	}
}
