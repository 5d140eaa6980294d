package opensearch

import (
	"fmt"
	"strings"
	"testing"
)

func TestPathBatchesKeepEachRequestLineShort(t *testing.T) {
	var names []string
	for i := range 500 {
		names = append(names, fmt.Sprintf("products-embeddings-%04d", i))
	}
	cases := []struct {
		name  string
		names []string
		max   int
		parts int
	}{
		{"none", nil, 2048, 0},
		{"one", []string{"a"}, 2048, 1},
		{"fits", []string{"a", "b", "c"}, 5, 1},
		{"splits", []string{"a", "b", "c"}, 3, 2},
		{"a name longer than the limit stands alone", []string{"a", strings.Repeat("x", 10), "b"}, 4, 3},
		{"a fleet", names, 2048, 7},
	}
	for _, c := range cases {
		got := pathBatches(c.names, c.max)
		if len(got) != c.parts {
			t.Errorf("%s: %d parts, want %d", c.name, len(got), c.parts)
		}
		var back []string
		for _, p := range got {
			if len(p) > c.max && !strings.Contains(p, strings.Repeat("x", 10)) {
				t.Errorf("%s: part of %d bytes over %d", c.name, len(p), c.max)
			}
			back = append(back, strings.Split(p, ",")...)
		}
		if strings.Join(back, ",") != strings.Join(c.names, ",") {
			t.Errorf("%s: names lost or reordered", c.name)
		}
	}
}
