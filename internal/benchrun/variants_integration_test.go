package benchrun_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.Main(m, testsupport.OpenSearch)) }

// TestObserveVariantOnTheRealNode: on the real node, a variant holding every shard of a
// just-created index is observed (once its primaries have started); one whose index has a shard no node may take (an allocation filter naming no
// node) is refused at once, not after the wait for copies on their way, with the
// allocation decider's reason from OpenSearch's own explain API.
func TestObserveVariantOnTheRealNode(t *testing.T) {
	c := testsupport.OpenSearchClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	local := bench.Variant{Name: "local", Nodes: "_local"}
	for _, idx := range []struct {
		name     string
		settings map[string]any
		refused  string // "" when observed
	}{
		{"variant-placed", map[string]any{"index.number_of_shards": 2, "index.number_of_replicas": 0}, ""},
		{"variant-unplaceable", map[string]any{"index.number_of_shards": 1, "index.number_of_replicas": 0, "index.routing.allocation.require._name": "no-such-node"},
			"shard 0 cannot be placed: cannot allocate because allocation is not permitted to any of the nodes; "},
	} {
		_ = c.DeleteIndex(ctx, idx.name)
		t.Cleanup(func() { _ = c.DeleteIndex(context.Background(), idx.name) })
		// Creation answers once a primary starts, which the unplaceable one never does; the
		// index exists once the cluster manager has it.
		createCtx, cancelCreate := context.WithTimeout(ctx, 3*time.Second)
		err := c.CreateIndex(createCtx, idx.name, idx.settings, map[string]any{"title": map[string]any{"type": "text"}}, nil)
		cancelCreate()
		if err != nil && (idx.refused == "" || !errors.Is(err, context.DeadlineExceeded)) {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := benchrun.ObserveVariant(ctx, c, idx.name, local)
		took := time.Since(start)
		var variantErr *benchrun.VariantError
		switch {
		case idx.refused == "" && (err != nil || len(got.NodeNames) != 1):
			t.Errorf("%s: observed %+v, %v; want the local node", idx.name, got, err)
		case idx.refused != "" && (!errors.As(err, &variantErr) || !strings.Contains(err.Error(), idx.refused) || !strings.Contains(err.Error(), "[filter]")):
			t.Errorf("%s: got %v, want a VariantError saying %q and naming the filter decider", idx.name, err, idx.refused)
		case took > 10*time.Second:
			t.Errorf("%s: took %s, want an answer without waiting", idx.name, took)
		}
		t.Logf("%s: %v (%s)", idx.name, err, took.Round(time.Millisecond))
	}
}
