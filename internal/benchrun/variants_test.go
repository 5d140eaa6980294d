package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func cell(variant string, sliceCount indexspec.Slices, clients int, qps, p90 float64) bench.Cell {
	return bench.Cell{Variant: variant, Measurement: autotune.Measurement{SliceCount: sliceCount, Clients: clients, QPS: qps, P90Ms: p90, P50Ms: p90 / 2, P99Ms: p90 * 2, CPUPercent: 50}}
}

func TestVariantsPinPoolsByTheirAttribute(t *testing.T) {
	got := Variants([]v1alpha1.BenchmarkVariant{{Name: "wide", Pool: "avx512"}, {Name: "other", Nodes: "simd:avx2,node-3"}})
	want := []bench.Variant{{Name: "wide", Nodes: "vectorpilot_pool:avx512"}, {Name: "other", Nodes: "simd:avx2,node-3"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestCompareVariants: ratios are geometric means over the cells both variants measured,
// against the first variant; the recommendation is the fastest variant's level unless a
// level on more instance families comes within 5 %.
func TestCompareVariants(t *testing.T) {
	spr := v1alpha1.BenchmarkVariantResult{Name: "spr", SIMD: "avx512_spr", CPUSIMD: "avx512_spr", LuceneVector: "panama-512", FaissLibrary: "avx512_spr"}
	avx2 := v1alpha1.BenchmarkVariantResult{Name: "avx2", SIMD: "avx2", CPUSIMD: "avx512_spr", LuceneVector: "panama-256", FaissLibrary: "avx2"}
	auto := v1alpha1.BenchmarkVariantResult{Name: "auto", SIMD: "auto", CPUSIMD: "avx512", LuceneVector: "panama-512"}
	bare := v1alpha1.BenchmarkVariantResult{Name: "bare"}
	cases := []struct {
		name           string
		engine         string
		variants       []v1alpha1.BenchmarkVariantResult
		cells          []bench.Cell
		wantRatios     []string
		wantVariant    string
		wantLevel      string
		reasonContains string
	}{
		{
			name:     "the wide level pays: recommended",
			engine:   "lucene",
			variants: []v1alpha1.BenchmarkVariantResult{avx2, spr},
			cells: []bench.Cell{cell("avx2", 1, 1, 100, 10), cell("spr", 1, 1, 130, 8), cell("avx2", 1, 2, 150, 14), cell("spr", 1, 2, 195, 11.2),
				cell("spr", 4, 1, 500, 1)}, // measured by one variant only: not compared
			wantRatios: []string{"1.000", "1.300"}, wantVariant: "spr", wantLevel: "avx512_spr", reasonContains: "variant spr (avx512_spr, Lucene panama-512) has the highest throughput: 1.30×",
		},
		{
			name:       "a faiss field: the faiss library each variant loaded",
			engine:     "faiss",
			variants:   []v1alpha1.BenchmarkVariantResult{avx2, spr},
			cells:      []bench.Cell{cell("avx2", 1, 1, 100, 10), cell("spr", 1, 1, 140, 8)},
			wantRatios: []string{"1.000", "1.400"}, wantVariant: "spr", wantLevel: "avx512_spr", reasonContains: "variant spr (avx512_spr, faiss library avx512_spr) has the highest",
		},
		{
			name:       "a faiss field, the broader level within 5 %: both libraries named",
			engine:     "faiss",
			variants:   []v1alpha1.BenchmarkVariantResult{spr, avx2},
			cells:      []bench.Cell{cell("spr", 1, 1, 100, 10), cell("avx2", 1, 1, 98, 10.1)},
			wantRatios: []string{"1.000", "0.980"}, wantVariant: "avx2", wantLevel: "avx2",
			reasonContains: "variant avx2 (avx2, faiss library avx2) is within 5% of the fastest, variant spr (avx512_spr, faiss library avx512_spr, ",
		},
		{
			name:       "a faiss field on nodes that do not say their CPU",
			engine:     "faiss",
			variants:   []v1alpha1.BenchmarkVariantResult{{Name: "a", SIMD: "avx2"}, {Name: "b", SIMD: "avx512"}},
			cells:      []bench.Cell{cell("a", 1, 1, 100, 10), cell("b", 1, 1, 120, 9)},
			wantRatios: []string{"1.000", "1.200"}, wantVariant: "b", wantLevel: "avx512", reasonContains: "(avx512, faiss library unobserved)",
		},
		{
			name:       "the wide level gains under 5 %: the broader level",
			variants:   []v1alpha1.BenchmarkVariantResult{spr, avx2},
			cells:      []bench.Cell{cell("spr", 1, 1, 100, 10), cell("avx2", 1, 1, 97, 10.3)},
			wantRatios: []string{"1.000", "0.970"}, wantVariant: "avx2", wantLevel: "avx2", reasonContains: "within 5% of the fastest, variant spr",
		},
		{
			name:       "auto names the CPU's level",
			variants:   []v1alpha1.BenchmarkVariantResult{avx2, auto},
			cells:      []bench.Cell{cell("avx2", 1, 1, 100, 10), cell("auto", 1, 1, 120, 9)},
			wantRatios: []string{"1.000", "1.200"}, wantVariant: "auto", wantLevel: "avx512",
		},
		{
			name:       "nodes without attributes: the fastest, no level",
			variants:   []v1alpha1.BenchmarkVariantResult{bare, {Name: "b"}},
			cells:      []bench.Cell{cell("bare", 1, 1, 100, 10), cell("b", 1, 1, 80, 12)},
			wantRatios: []string{"1.000", "0.800"}, wantVariant: "bare", reasonContains: "no level can be named",
		},
		{
			name:       "no common cell",
			variants:   []v1alpha1.BenchmarkVariantResult{avx2, spr},
			cells:      []bench.Cell{cell("avx2", 1, 1, 100, 10), cell("spr", 2, 1, 130, 8)},
			wantRatios: []string{"1.000", ""}, wantVariant: "avx2", reasonContains: "nothing to compare",
		},
	}
	for _, c := range cases {
		variants := slices.Clone(c.variants)
		rec := CompareVariants(variants, c.cells, c.engine)
		var ratios []string
		for _, v := range variants {
			ratios = append(ratios, v.QPSRatio)
		}
		if !slices.Equal(ratios, c.wantRatios) {
			t.Errorf("%s: qps ratios %v, want %v", c.name, ratios, c.wantRatios)
		}
		if rec == nil || rec.Variant != c.wantVariant || rec.Level != c.wantLevel || !strings.Contains(rec.Reason, c.reasonContains) {
			t.Errorf("%s: recommendation %+v, want variant %s level %q reason with %q", c.name, rec, c.wantVariant, c.wantLevel, c.reasonContains)
		}
		if rec != nil && rec.Level != "" && len(rec.InstanceFamilies) == 0 {
			t.Errorf("%s: a named level must list its instance families", c.name)
		}
	}
	if rec := CompareVariants([]v1alpha1.BenchmarkVariantResult{spr}, []bench.Cell{cell("spr", 1, 1, 1, 1)}, "faiss"); rec != nil {
		t.Errorf("one variant compares with nothing, got %+v", rec)
	}
	// The p90 ratio is the variant's p90 over the first's: 0.8 = 20 % faster.
	v := []v1alpha1.BenchmarkVariantResult{avx2, spr}
	CompareVariants(v, []bench.Cell{cell("avx2", 1, 1, 100, 10), cell("spr", 1, 1, 125, 8)}, "faiss")
	if v[1].P90Ratio != "0.800" {
		t.Errorf("p90 ratio %s, want 0.800", v[1].P90Ratio)
	}
}

// TestDescribeVariant: a variant is what its nodes report — the level asked, the CPU's,
// Lucene's vector code and the faiss library the plugin picks from the CPU and the
// knn.faiss.*.disabled settings —, empty where a node does not tell.
func TestDescribeVariant(t *testing.T) {
	node := func(name, cpu, asked string, disabled ...string) opensearch.NodeVariant {
		attrs := map[string]string{}
		if cpu != "" {
			attrs["vectorpilot_cpu"] = cpu
		}
		if asked != "" {
			attrs["vectorpilot_simd"] = asked
		}
		return opensearch.NodeVariant{Name: name, Attributes: attrs, Disabled: disabled,
			JVMArguments: []string{"--add-modules=jdk.incubator.vector"}}
	}
	v := bench.Variant{Name: "v", Nodes: "vectorpilot_pool:p"}
	for _, c := range []struct {
		name                        string
		nodes                       []opensearch.NodeVariant
		simd, cpu, lucene, faissLib string
	}{
		{"a pool asking for avx2 on an avx512 CPU", []opensearch.NodeVariant{
			node("p-0", "avx512", "avx2", "knn.faiss.avx512.disabled", "knn.faiss.avx512_spr.disabled"),
			node("p-1", "avx512", "avx2", "knn.faiss.avx512.disabled", "knn.faiss.avx512_spr.disabled")},
			"avx2", "avx512", "panama-512", "avx2"},
		{"nothing disabled: the CPU's best", []opensearch.NodeVariant{node("p-0", "avx512", "auto")}, "auto", "avx512", "panama-512", "avx512"},
		{"every SIMD library disabled", []opensearch.NodeVariant{node("p-0", "avx2", "", "knn.faiss.avx2.disabled", "knn.faiss.avx512.disabled", "knn.faiss.avx512_spr.disabled")},
			"", "avx2", "panama-256", "generic"},
		{"arm64 loads the generic faiss", []opensearch.NodeVariant{node("p-0", "neon", "neon")}, "neon", "neon", "panama-128", "generic"},
		{"nodes disagree", []opensearch.NodeVariant{node("p-0", "avx512", ""), node("p-1", "avx512", "", "knn.faiss.avx512.disabled")},
			"", "avx512", "panama-512", "mixed"},
		{"a node that does not say its CPU", []opensearch.NodeVariant{node("p-0", "avx512", ""), node("x", "", "")},
			"", "avx512", "mixed", ""},
	} {
		got := describeVariant(v, c.nodes)
		if got.SIMD != c.simd || got.CPUSIMD != c.cpu || got.LuceneVector != c.lucene || got.FaissLibrary != c.faissLib || len(got.NodeNames) != len(c.nodes) {
			t.Errorf("%s: got simd %q cpu %q lucene %q faiss %q nodes %v, want %q %q %q %q", c.name, got.SIMD, got.CPUSIMD, got.LuceneVector, got.FaissLibrary, got.NodeNames,
				c.simd, c.cpu, c.lucene, c.faissLib)
		}
	}
}

func TestMissingCopies(t *testing.T) {
	started := func(shard, node string) opensearch.ShardCopy {
		return opensearch.ShardCopy{Index: "vec", Shard: shard, PriRep: "r", State: "STARTED", Node: node}
	}
	copies := []opensearch.ShardCopy{
		started("0", "a-0"), started("0", "b-0"),
		started("1", "a-0"), {Index: "vec", Shard: "1", PriRep: "r", State: "INITIALIZING", Node: "b-1"},
		started("10", "a-0"), {Index: "vec", Shard: "10", PriRep: "r", State: "UNASSIGNED"},
		started("2", "a-0"), started("2", "c-0"),
		{Index: "other", Shard: "2", State: "STARTED", Node: "a-0"},
	}
	for _, c := range []struct {
		name  string
		nodes []string
		want  []missingCopy
	}{
		{"a pool holding every shard", []string{"a-0"}, nil},
		{"a copy initializing, one unassigned, one on another pool's node", []string{"b-0", "b-1"},
			[]missingCopy{{Shard: "1", Moving: true}, {Shard: "2"}, {Shard: "10", Unassigned: &copies[5]}}},
		{"nodes holding nothing", []string{"z-0"},
			[]missingCopy{{Shard: "0"}, {Shard: "1", Moving: true}, {Shard: "2"}, {Shard: "10", Unassigned: &copies[5]}}},
	} {
		got := missingCopies(copies, "vec", c.nodes)
		if !slices.EqualFunc(got, c.want, func(a, b missingCopy) bool {
			return a.Shard == b.Shard && a.Moving == b.Moving && a.Unassigned == b.Unassigned
		}) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// scriptedCopies answers Shards with one listing after another (the last one for good),
// and UnplaceableShard from a map by "shard/p|r".
type scriptedCopies struct {
	listings  [][]opensearch.ShardCopy
	reads     int
	why       map[string]string
	explained []string
}

func (s *scriptedCopies) Shards(context.Context) ([]opensearch.ShardCopy, error) {
	l := s.listings[min(s.reads, len(s.listings)-1)]
	s.reads++
	return l, nil
}

func (s *scriptedCopies) UnplaceableShard(_ context.Context, _ string, shard int, primary bool) (string, error) {
	key := strconv.Itoa(shard) + map[bool]string{true: "/p", false: "/r"}[primary]
	s.explained = append(s.explained, key)
	return s.why[key], nil
}

// TestAwaitCopies: a variant waits while the copies its nodes miss are on their way
// (recovering, relocating, unassigned but placeable) and is refused at once when one
// cannot come (unplaceable, or every copy started elsewhere), or once the wait is over.
func TestAwaitCopies(t *testing.T) {
	copyOf := func(shard, prirep, state, node string) opensearch.ShardCopy {
		return opensearch.ShardCopy{Index: "vec", Shard: shard, PriRep: prirep, State: state, Node: node}
	}
	settled := []opensearch.ShardCopy{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "STARTED", "b-0")}
	for _, c := range []struct {
		name      string
		listings  [][]opensearch.ShardCopy
		why       map[string]string
		timeout   time.Duration
		reads     int
		explained []string
		refused   string // "" when the copies arrive
	}{
		{name: "settled", listings: [][]opensearch.ShardCopy{settled}, reads: 1},
		{name: "a replica recovering after the load", listings: [][]opensearch.ShardCopy{
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "INITIALIZING", "b-0")}, settled}, reads: 2},
		{name: "a replica not yet placed, then recovering", listings: [][]opensearch.ShardCopy{
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "UNASSIGNED", "")},
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "INITIALIZING", "b-0")}, settled},
			reads: 3, explained: []string{"0/r"}},
		{name: "a replica no node may take", listings: [][]opensearch.ShardCopy{
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "UNASSIGNED", "")}},
			why:   map[string]string{"0/r": "cannot allocate because allocation is not permitted to any of the nodes; b-0: [awareness] too many copies"},
			reads: 1, explained: []string{"0/r"}, refused: "shard 0 cannot be placed: cannot allocate because allocation is not permitted to any of the nodes; b-0: [awareness] too many copies"},
		{name: "every copy started on other nodes", listings: [][]opensearch.ShardCopy{
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "STARTED", "a-1")}},
			reads: 1, refused: "nodes b-0 hold no started copy of shard 0 of index vec; give the index"},
		{name: "one shard recovering, another started on other nodes only", listings: [][]opensearch.ShardCopy{
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "INITIALIZING", "b-0"),
				copyOf("1", "p", "STARTED", "a-0"), copyOf("1", "r", "STARTED", "a-1")}},
			reads: 1, refused: "hold no started copy of shard 0,1 of index vec; give the index"},
		{name: "a recovery outlasting the wait", listings: [][]opensearch.ShardCopy{
			{copyOf("0", "p", "STARTED", "a-0"), copyOf("0", "r", "INITIALIZING", "b-0")}},
			timeout: 30 * time.Millisecond, refused: "still on their way after 30ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &scriptedCopies{listings: c.listings, why: c.why}
			timeout := c.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			err := awaitCopies(t.Context(), s, "vec", "b", []string{"b-0"}, time.Millisecond, timeout)
			var refused *VariantError
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && (!errors.As(err, &refused) || !strings.Contains(err.Error(), c.refused)):
				t.Fatalf("got %v, want a VariantError saying %q", err, c.refused)
			}
			if c.reads > 0 && s.reads != c.reads {
				t.Errorf("read the copies %d times, want %d", s.reads, c.reads)
			}
			if !slices.Equal(s.explained, c.explained) {
				t.Errorf("asked allocation explain about %v, want %v", s.explained, c.explained)
			}
		})
	}
}

// TestObserveVariantWaitsForARecoveringCopy: the variant's node reports its replica
// INITIALIZING for two reads (peer recovery after the load, as on a loaded node), then
// STARTED: the variant is measured, not refused. Pure logic against a server playing
// OpenSearch's answers; the real A/B runs in test/e2e.
func TestObserveVariantWaitsForARecoveringCopy(t *testing.T) {
	var shardReads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/settings,jvm"):
			_, _ = io.WriteString(w, `{"nodes":{"id-b":{"name":"b-0","version":"3.2.0","attributes":{"vectorpilot_pool":"b"}}}}`)
		case r.URL.Path == "/_cat/shards":
			state := "STARTED"
			if shardReads.Add(1) <= 2 {
				state = "INITIALIZING"
			}
			_, _ = io.WriteString(w, `[{"index":"vec","shard":"0","prirep":"p","state":"STARTED","node":"a-0"},`+
				`{"index":"vec","shard":"0","prirep":"r","state":"`+state+`","node":"b-0"}]`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := opensearch.New(opensearch.Config{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ObserveVariant(t.Context(), c, "vec", bench.Variant{Name: "b", Nodes: "vectorpilot_pool:b"})
	if err != nil {
		t.Fatalf("variant refused while its copy recovers: %v", err)
	}
	if !slices.Equal(got.NodeNames, []string{"b-0"}) || shardReads.Load() != 3 {
		t.Errorf("observed %+v after %d reads of the shards, want node b-0 after 3", got, shardReads.Load())
	}
}

// TestApplyWithVariants: a run with variants records the comparison, never the slice
// tuner's recommendations, and is not the tuner's input.
func TestApplyWithVariants(t *testing.T) {
	run := &v1alpha1.BenchmarkRun{Spec: v1alpha1.BenchmarkRunSpec{Variants: []v1alpha1.BenchmarkVariant{{Name: "avx2", Pool: "a"}, {Name: "spr", Pool: "b"}}}}
	res := Result{Engine: "vectorpilot", Cores: 2, Cells: []bench.Cell{cell("avx2", 1, 1, 100, 10), cell("spr", 1, 1, 130, 8)},
		Variants: []v1alpha1.BenchmarkVariantResult{{Name: "avx2", SIMD: "avx2"}, {Name: "spr", SIMD: "avx512_spr"}}}
	if err := res.Apply(run, DefaultParams); err != nil {
		t.Fatal(err)
	}
	s := run.Status
	if len(s.Results) != 2 || s.Results[1].Variant != "spr" || len(s.Recommendations) != 0 || s.SIMDRecommendation == nil || s.SIMDRecommendation.Level != "avx512_spr" {
		t.Errorf("status %+v", s)
	}
	run.Status.Phase = v1alpha1.BenchmarkSucceeded
	run.Status.CompletionTime = run.Status.StartTime
	if TunerInput(run) {
		t.Error("a run with variants must never be the tuner's input")
	}
}

// TestApplyWithoutCPU: OpenSearch Benchmark's cells carry no CPU; the status shows none
// (not 0), the run recommends no slice setting, and it never becomes the tuner's table.
func TestApplyWithoutCPU(t *testing.T) {
	raw, _ := json.Marshal([]StepCell{{Cell: cell("", 1, 1, 100, 10), RecallValid: true}, {Cell: cell("", 4, 1, 120, 7), RecallValid: true}})
	res, err := ParseCells(string(raw), "opensearch-benchmark")
	if err != nil {
		t.Fatal(err)
	}
	run := &v1alpha1.BenchmarkRun{}
	if err := res.Apply(run, DefaultParams); err != nil {
		t.Fatal(err)
	}
	s := run.Status
	if len(s.Results) != 2 || s.Results[0].CPUPercent != "" || s.Results[0].QPS != "100.00" || len(s.Recommendations) != 0 {
		t.Errorf("status %+v", s)
	}
	run.Status.Phase, run.Status.CompletionTime = v1alpha1.BenchmarkSucceeded, &metav1.Time{}
	if TunerInput(run) {
		t.Error("a run without CPU must never be the tuner's input")
	}
	raw, _ = json.Marshal([]StepCell{{Cell: cell("", 1, 1, 100, 10), CPUValid: true}, {Cell: cell("", 4, 1, 120, 7), CPUValid: true}})
	if res, err = ParseCells(string(raw), "vectorpilot"); err != nil {
		t.Fatal(err)
	}
	if err := res.Apply(run, DefaultParams); err != nil {
		t.Fatal(err)
	}
	if !TunerInput(run) || run.Status.Results[0].CPUPercent == "" || len(run.Status.Recommendations) != 1 {
		t.Errorf("the engine's cells with CPU: tuner input %v, status %+v", TunerInput(run), run.Status)
	}
}

func repResult(name string, recall, hot, p90 float64) bench.RepresentationResult {
	r := bench.RepresentationResult{HotBytesPerDoc: hot, DiskBytesPerDoc: hot * 2, HNSW: []bench.Cell{cell("", 1, 1, 100, p90)}}
	r.Name = name
	r.HNSW[0].Recall = recall
	return r
}

func TestRepresentationRecommendationMeetsTheRunsTarget(t *testing.T) {
	results := []bench.RepresentationResult{repResult("float", 0.99, 600, 2), repResult("sq7", 0.96, 200, 1.5), repResult("byte", 0.91, 180, 1.4)}
	for _, c := range []struct {
		target, want string
		met          bool
	}{{"0.95", "sq7", true}, {"0.90", "byte", true}, {"0.99", "float", true}, {"", "sq7", true}, {"0.995", "float", false}} {
		run := &v1alpha1.BenchmarkRun{Spec: v1alpha1.BenchmarkRunSpec{RecallTarget: c.target}}
		if err := (Result{Representations: results}).Apply(run, DefaultParams); err != nil {
			t.Fatal(err)
		}
		rec := run.Status.RepresentationRecommendation
		if rec == nil || string(rec.Name) != c.want || rec.Met != c.met || len(run.Status.Representations) != 3 {
			t.Errorf("target %q: %+v, want %s met=%v", c.target, rec, c.want, c.met)
		}
	}
}

// fakeIndexes is an OpenSearch holding indexes with their _meta.
type fakeIndexes struct {
	meta    map[string]map[string]any
	deleted []string
}

func (f *fakeIndexes) GetIndex(_ context.Context, name string) (*opensearch.Index, error) {
	m, ok := f.meta[name]
	if !ok {
		return nil, &opensearch.APIError{Status: 404}
	}
	return &opensearch.Index{Name: name, Meta: m}, nil
}

func (f *fakeIndexes) DeleteIndex(_ context.Context, name string) error {
	f.deleted = append(f.deleted, name)
	return nil
}

// TestDropScratchDeletesOnlyTheRunsOwn: an index of a scratch name without the run's mark
// (a user's, another run's) is never deleted.
func TestDropScratchDeletesOnlyTheRunsOwn(t *testing.T) {
	run := &v1alpha1.BenchmarkRun{Spec: v1alpha1.BenchmarkRunSpec{Representations: []v1alpha1.VectorRepresentation{"float", "byte", "sq7", "binary"}}}
	run.Namespace, run.Name, run.UID = "ns", "r", "uid-1"
	f := &fakeIndexes{meta: map[string]map[string]any{
		"vec-vpbench-float":  {ScratchMark: ScratchOwner(run)},
		"vec-vpbench-byte":   {ScratchMark: "ns/r/uid-0"}, // an earlier run of the same name
		"vec-vpbench-binary": {},                          // somebody's index
	}}
	if err := DropScratch(context.Background(), f, run, "vec"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.deleted, []string{"vec-vpbench-float"}) {
		t.Errorf("deleted %v, want only the run's own", f.deleted)
	}
}

func TestParseCellsCollectsVariantsInOrder(t *testing.T) {
	cells := `["{\"sliceCount\":1,\"clients\":1,\"qps\":10,\"p90Ms\":2,\"variant\":\"a\",\"cores\":2,\"recallValid\":true,\"variantNodes\":{\"name\":\"a\",\"nodes\":\"vectorpilot_pool:a\"}}",
	{"sliceCount":1,"clients":1,"qps":12,"p90Ms":1.5,"variant":"b","cores":2,"recallValid":true,"variantNodes":{"name":"b","nodes":"vectorpilot_pool:b"}},
	{"sliceCount":2,"clients":1,"qps":11,"p90Ms":1.8,"variant":"a","cores":2,"recallValid":true,"variantNodes":{"name":"a","nodes":"vectorpilot_pool:a"}}]`
	res, err := ParseCells(cells, "vectorpilot")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 3 || len(res.Variants) != 2 || res.Variants[0].Name != "a" || res.Variants[1].Nodes != "vectorpilot_pool:b" || res.Cells[1].Variant != "b" {
		t.Errorf("parsed %+v", res)
	}
}
