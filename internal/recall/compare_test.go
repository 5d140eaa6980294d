package recall

import (
	"context"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// twoIndexes answers as scripted for the source, and the target's approximate searches from
// its own lists, each after a delay.
type twoIndexes struct {
	scripted
	target      string
	targetKNN   map[string][]string
	targetDelay time.Duration
	order       []string
}

func (s *twoIndexes) Search(ctx context.Context, index string, body any) (opensearch.SearchResult, error) {
	q := body.(map[string]any)["query"].(map[string]any)
	if q["knn"] != nil {
		s.order = append(s.order, index)
	}
	if index != s.target {
		return s.scripted.Search(ctx, index, body)
	}
	if q["knn"] == nil {
		panic("only approximate searches go to the target")
	}
	time.Sleep(s.targetDelay)
	saved := s.approx
	s.approx = s.targetKNN
	defer func() { s.approx = saved }()
	return s.scripted.Search(ctx, index, body)
}

func TestCompare(t *testing.T) {
	s := &twoIndexes{
		scripted: scripted{
			docs:   map[string]string{"1": "[1,0]", "2": "[0,1]"},
			approx: map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"2", "5", "6"}},
			exact:  map[string][]string{"[1,0]": {"1", "3", "4"}, "[0,1]": {"2", "5", "6"}},
		},
		target:      "new",
		targetKNN:   map[string][]string{"[1,0]": {"1", "3", "x"}, "[0,1]": {"2", "5", "6"}},
		targetDelay: 20 * time.Millisecond,
	}
	cmp, err := Compare(t.Context(), s, Params{Index: "old", Field: "v", SpaceType: "l2", K: 2, SampleSize: 2, QueriesPerSecond: 1000, Seed: 1}, "new")
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Sample != 2 || cmp.Source.Recall != 1 || cmp.Target.Recall != 0.75 {
		t.Errorf("Compare = %+v, want recall 1 (source) and 0.75 (target) over 2 queries", cmp)
	}
	if cmp.Target.P90 < 20*time.Millisecond || cmp.Source.P90 >= 20*time.Millisecond {
		t.Errorf("p90 source %s, target %s: want the target's 20 ms delay seen on the target only", cmp.Source.P90, cmp.Target.P90)
	}
	if len(s.order) != 4 || s.order[0] != "old" || s.order[2] != "new" {
		t.Errorf("approximate searches ran in the order %v, want the indexes in turns (old first, then new first)", s.order)
	}
	for _, b := range s.bodies {
		if g, _ := b["stats"].([]string); len(g) != 1 || g[0] != StatsGroup {
			t.Errorf("a gate search without the stats group %s: %v", StatsGroup, b)
		}
	}
}
