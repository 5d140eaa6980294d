package recall

import (
	"context"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// twoIndexes answers as scripted for the source, and the target's searches from its own
// lists, each approximate one after a delay.
type twoIndexes struct {
	scripted
	target                 string
	targetKNN, targetExact map[string][]string
	targetDelay            time.Duration
	order                  []string
}

func (s *twoIndexes) SearchPreferring(ctx context.Context, index string, body any, preference string) (opensearch.SearchResult, error) {
	q := body.(map[string]any)["query"].(map[string]any)
	if q["knn"] != nil {
		s.order = append(s.order, index)
	}
	if index != s.target {
		return s.scripted.SearchPreferring(ctx, index, body, preference)
	}
	if q["function_score"] != nil {
		panic("the sample is drawn from the source")
	}
	if q["knn"] != nil {
		time.Sleep(s.targetDelay)
	}
	approx, exact := s.approx, s.exact
	s.approx, s.exact = s.targetKNN, s.targetExact
	defer func() { s.approx, s.exact = approx, exact }()
	return s.scripted.SearchPreferring(ctx, index, body, preference)
}

func TestCompare(t *testing.T) {
	s := &twoIndexes{
		scripted: scripted{
			docs:   map[string]string{"1": "[1,0]", "2": "[0,1]"},
			approx: map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"2", "5", "6"}},
			exact:  map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"2", "5", "6"}},
		},
		target:    "new",
		targetKNN: map[string][]string{"[1,0]": {"1", "3", "x"}, "[0,1]": {"7", "5", "6"}},
		// The target lacks 2 and 7 moved since the last copy pass: its own exact lists.
		targetExact: map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"7", "5", "6"}},
		targetDelay: 20 * time.Millisecond,
	}
	cmp, err := Compare(t.Context(), s, Params{Index: "old", Field: "v", SpaceType: "l2", K: 2, SampleSize: 2, QueriesPerSecond: 1000, Seed: 1}, "new")
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Sample != 2 || cmp.Source.Recall != 1 || cmp.Target.Recall != 0.75 {
		t.Errorf("Compare = %+v, want recall 1 (source) and 0.75 (target, against its own exact lists) over 2 queries", cmp)
	}
	if cmp.Target.P90 < 20*time.Millisecond || cmp.Source.P90 >= 20*time.Millisecond {
		t.Errorf("p90 source %s, target %s: want the target's 20 ms delay seen on the target only", cmp.Source.P90, cmp.Target.P90)
	}
	if len(s.order) != 4 || s.order[0] != "old" || s.order[2] != "new" {
		t.Errorf("approximate searches ran in the order %v, want the indexes in turns (old first, then new first)", s.order)
	}
	for i, b := range s.bodies {
		if g, _ := b["stats"].([]string); len(g) != 1 || g[0] != StatsGroup {
			t.Errorf("a gate search without the stats group %s: %v", StatsGroup, b)
		}
		if s.preferences[i] != s.preferences[0] || s.preferences[0] == "" {
			t.Errorf("gate searches preferring %q: want one custom preference for all", s.preferences)
			break
		}
	}
}
