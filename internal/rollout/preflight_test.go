package rollout

import (
	"slices"
	"strings"
	"testing"
)

// The version IDs are what nodes write into index.version.created: OpenSearch's masked
// (3.6.0: 137277827, read off a 3.6.0 node), Elasticsearch's plain.
func TestPreflight(t *testing.T) {
	const (
		os360   = "137277827"
		os2191  = "136407927"
		os130   = "135247827"
		es7102  = "7100299"
		es6800  = "6080099"
		unknown = "not-a-version"
	)
	for _, c := range []struct {
		name    string
		target  string
		indexes map[string]IndexSettings
		want    []string // substrings, one per finding, in order
	}{
		{name: "same major: nothing", target: "3.7.0", indexes: map[string]IndexSettings{"docs": {"index.version.created": os360}}},
		{name: "previous major is read", target: "3.6.0", indexes: map[string]IndexSettings{"docs": {"index.version.created": os2191}}},
		{name: "two majors back is refused, named", target: "3.6.0",
			indexes: map[string]IndexSettings{"old": {"index.version.created": os130}, "docs": {"index.version.created": os2191}},
			want:    []string{"old: created by OpenSearch 1.3.0, and OpenSearch 3.6.0 reads indexes of 2.x and 3.x only"}},
		{name: "Elasticsearch 7 counts as OpenSearch 1", target: "2.19.1", indexes: map[string]IndexSettings{"legacy": {"index.version.created": es7102}}},
		{name: "Elasticsearch 7 is two majors back for 3.x", target: "3.0.0", indexes: map[string]IndexSettings{"legacy": {"index.version.created": es7102}},
			want: []string{"legacy: created by Elasticsearch 7.10.2"}},
		{name: "Elasticsearch 6 is two majors back for 2.x", target: "2.0.0", indexes: map[string]IndexSettings{"legacy": {"index.version.created": es6800}},
			want: []string{"legacy: created by Elasticsearch 6.8.0"}},
		{name: "k-NN index settings 3.0 removed, each named", target: "3.6.0",
			indexes: map[string]IndexSettings{"vectors": {"index.version.created": os2191, "index.knn": "true", "index.knn.space_type": "cosinesimil", "index.knn.algo_param.m": "16"}},
			want:    []string{"vectors: sets index.knn.algo_param.m, which the k-NN plugin of OpenSearch 3.x removed", "vectors: sets index.knn.space_type"}},
		{name: "the same settings within 2.x: nothing", target: "2.19.1",
			indexes: map[string]IndexSettings{"vectors": {"index.version.created": os2191, "index.knn.space_type": "cosinesimil"}}},
		{name: "settings 3.x still has: nothing", target: "3.6.0",
			indexes: map[string]IndexSettings{"vectors": {"index.version.created": os2191, "index.knn": "true", "index.knn.algo_param.ef_search": "100"}}},
		{name: "an unreadable version ID is not guessed at", target: "3.6.0", indexes: map[string]IndexSettings{"odd": {"index.version.created": unknown}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Preflight(c.target, c.indexes)
			if !slices.EqualFunc(got, c.want, strings.Contains) {
				t.Errorf("Preflight(%s) = %q, want findings containing %q", c.target, got, c.want)
			}
		})
	}
}
