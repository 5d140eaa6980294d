package recall

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		name          string
		approx, exact []string
		k             int
		want          float64
	}{
		{"all found, self left out", []string{"q", "a", "b"}, []string{"q", "a", "b"}, 2, 1},
		{"self missing from the approximate list", []string{"a", "b"}, []string{"q", "a", "b"}, 2, 1},
		{"half found", []string{"q", "a", "x"}, []string{"q", "a", "b"}, 2, 0.5},
		{"none found", []string{"x", "y"}, []string{"a", "b"}, 2, 0},
		{"order within the top k does not matter", []string{"b", "a"}, []string{"a", "b"}, 2, 1},
		{"beyond k does not count", []string{"a", "x", "b"}, []string{"a", "b", "c"}, 2, 0.5},
		{"fewer exact neighbours than k", []string{"a"}, []string{"q", "a"}, 10, 1},
		{"only self in the index", []string{"q"}, []string{"q"}, 10, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Of("q", c.approx, c.exact, c.k); got != c.want {
				t.Errorf("Of = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDue(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name     string
		last     Last
		interval time.Duration
		due      bool
		wait     time.Duration
	}{
		{"never attempted", Last{}, time.Hour, true, 0},
		{"measured within the interval", Last{MeasuredAt: ago(10 * time.Minute), Generation: 3}, time.Hour, false, 50 * time.Minute},
		{"interval passed", Last{MeasuredAt: ago(time.Hour), Generation: 3}, time.Hour, true, 0},
		{"spec changed since", Last{MeasuredAt: ago(time.Second), Generation: 2}, time.Hour, true, 0},
		{"skipped: retried within a minute", Last{MeasuredAt: ago(30 * time.Minute), SkippedAt: ago(20 * time.Second), Generation: 3}, time.Hour, false, 40 * time.Second},
		{"skipped: short interval retries at the interval", Last{SkippedAt: ago(2 * time.Second), Generation: 3}, 5 * time.Second, false, 3 * time.Second},
		{"an old skip before a measurement counts no more", Last{MeasuredAt: ago(5 * time.Minute), SkippedAt: ago(20 * time.Minute), Generation: 3}, 10 * time.Minute, false, 5 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			due, wait := Due(c.last, 3, c.interval, now)
			if due != c.due || wait != c.wait {
				t.Errorf("Due = %v, %v; want %v, %v", due, wait, c.due, c.wait)
			}
		})
	}
}

func TestSkip(t *testing.T) {
	cpu := func(p float64) *float64 { return &p }
	fine := Load{Health: "green", Documents: 10, CPUPercent: cpu(30), HeadroomPercent: 20}
	for _, c := range []struct {
		name   string
		change func(*Load)
		want   string
	}{
		{"fine", func(*Load) {}, ""},
		{"yellow is fine", func(l *Load) { l.Health = "yellow" }, ""},
		{"at the limit", func(l *Load) { l.CPUPercent = cpu(80) }, ""},
		{"cpu not read yet", func(l *Load) { l.CPUPercent = nil }, ""},
		{"red", func(l *Load) { l.Health = "red" }, "index health is red"},
		{"cluster red", func(l *Load) { l.ClusterHealth = "red" }, "cluster health is red"},
		{"cluster yellow", func(l *Load) { l.ClusterHealth = "yellow" }, ""},
		{"empty", func(l *Load) { l.Documents = 0 }, "no documents"},
		{"benchmarking", func(l *Load) { l.Benchmarking = true }, "BenchmarkRun"},
		{"busy", func(l *Load) { l.CPUPercent = cpu(81) }, "CPU (81%) is above 80%"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := fine
			c.change(&l)
			got := Skip(l)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("Skip = %q, want one saying %q", got, c.want)
			}
		})
	}
}

// scripted answers the sample draw with docs, then each approximate and exact search from
// its lists, recording the bodies and preferences.
type scripted struct {
	docs          map[string]string
	approx, exact map[string][]string
	bodies        []map[string]any
	preferences   []string
	fail          error
}

func (s *scripted) SearchPreferring(_ context.Context, _ string, body any, preference string) (opensearch.SearchResult, error) {
	b := body.(map[string]any)
	s.bodies = append(s.bodies, b)
	s.preferences = append(s.preferences, preference)
	if s.fail != nil {
		return opensearch.SearchResult{}, s.fail
	}
	hits := func(ids []string) opensearch.SearchResult {
		r := opensearch.SearchResult{TookMs: 2}
		for _, id := range ids {
			r.Hits = append(r.Hits, opensearch.Hit{ID: id})
		}
		return r
	}
	q := b["query"].(map[string]any)
	switch {
	case q["function_score"] != nil:
		r := opensearch.SearchResult{TookMs: 1}
		for id, vector := range s.docs {
			r.Hits = append(r.Hits, opensearch.Hit{ID: id, Source: json.RawMessage(`{"v":` + vector + `}`)})
		}
		return r, nil
	case q["knn"] != nil:
		return hits(s.approx[string(q["knn"].(map[string]any)["v"].(map[string]any)["vector"].(json.RawMessage))]), nil
	default:
		params := q["script_score"].(map[string]any)["script"].(map[string]any)["params"].(map[string]any)
		return hits(s.exact[string(params["query_value"].(json.RawMessage))]), nil
	}
}

func TestMeasure(t *testing.T) {
	s := &scripted{
		docs:   map[string]string{"1": "[1,0]", "2": "[0,1]"},
		approx: map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"2", "5", "9"}},
		exact:  map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"2", "5", "6"}},
	}
	res, err := Measure(t.Context(), s, Params{Index: "i", Field: "v", SpaceType: "hamming", K: 2, SampleSize: 2, QueriesPerSecond: 1000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recall != 0.75 || res.Sample != 2 || res.Searches != 5 || res.ServerMillis != 1+4*2 {
		t.Errorf("Measure = %+v, want recall 0.75 over 2 queries, 5 searches, 9 ms", res)
	}
	for _, b := range s.bodies {
		if g, _ := b["stats"].([]string); len(g) != 1 || g[0] != StatsGroup {
			t.Errorf("a measurement search without the stats group %s: %v", StatsGroup, b)
		}
		if q := b["query"].(map[string]any); q["script_score"] != nil {
			if space := q["script_score"].(map[string]any)["script"].(map[string]any)["params"].(map[string]any)["space_type"]; space != "hamming" {
				t.Errorf("exact search of a hamming field scores with %v, want the field's hamming", space)
			}
		}
	}
	if p := s.preferences[0]; p == "" || p[0] == '_' || slices.ContainsFunc(s.preferences, func(q string) bool { return q != p }) {
		t.Errorf("searches preferring %q: want one custom preference for every search of a measurement (the same shard copies)", s.preferences)
	}
	again := &scripted{docs: s.docs, approx: s.approx, exact: s.exact}
	if _, err := Measure(t.Context(), again, Params{Index: "i", Field: "v", SpaceType: "hamming", K: 2, SampleSize: 2, QueriesPerSecond: 1000, Seed: 8}); err != nil || again.preferences[0] == s.preferences[0] {
		t.Errorf("a measurement with another seed prefers %q (err %v), want other copies than %q: measurements spread over the copies", again.preferences[0], err, s.preferences[0])
	}
	if k := s.bodies[1]["size"]; k != 3 {
		t.Errorf("approximate search asks for %v, want k+1 = 3 (the query's own document comes back too)", k)
	}

	if _, err := Measure(t.Context(), &scripted{}, Params{Field: "v", K: 2, SampleSize: 2, QueriesPerSecond: 1000}); !errors.Is(err, ErrNoDocuments) {
		t.Errorf("an empty sample: %v, want ErrNoDocuments", err)
	}
	if _, err := Measure(t.Context(), &scripted{fail: errors.New("429")}, Params{Field: "v", K: 2, SampleSize: 2, QueriesPerSecond: 1000}); err == nil {
		t.Error("a failed search measured a recall")
	}
}

func TestMeasureIsPaced(t *testing.T) {
	s := &scripted{docs: map[string]string{"1": "[1]", "2": "[2]"}}
	start := time.Now()
	if _, err := Measure(t.Context(), s, Params{Field: "v", K: 1, SampleSize: 2, QueriesPerSecond: 10}); err != nil {
		t.Fatal(err)
	}
	// Five searches at 10 per second: the first at once, the other four 100 ms apart.
	if elapsed := time.Since(start); elapsed < 350*time.Millisecond {
		t.Errorf("5 searches at 10/s took %s, want at least 400 ms", elapsed)
	}
}
