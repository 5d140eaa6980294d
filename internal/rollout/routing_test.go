package rollout

import (
	"maps"
	"testing"
)

func TestSearchWeights(t *testing.T) {
	three := map[string]string{"a": "a", "b": "b", "c": "c"}
	for _, tc := range []struct {
		name  string
		nodes map[string]string
		away  []string
		want  map[string]string
	}{
		{"one of three", three, []string{"b"}, map[string]string{"a": "1", "b": "0", "c": "1"}},
		{"two of three is more than half", three, []string{"a", "b"}, nil},
		{"two of four", map[string]string{"a": "a", "b": "b", "c": "c", "d": "d"}, []string{"a", "d"}, map[string]string{"a": "0", "b": "1", "c": "1", "d": "0"}},
		{"one of two", map[string]string{"a": "a", "b": "b"}, []string{"a"}, map[string]string{"a": "0", "b": "1"}},
		{"a single node has nowhere to send searches", map[string]string{"a": "a"}, []string{"a"}, nil},
		{"a node without the attribute", map[string]string{"a": "a", "b": "", "c": "c"}, []string{"a"}, nil},
		{"nothing away", three, nil, nil},
		{"away node not in the cluster", three, []string{"x"}, nil},
		{"keyed by the attribute value", map[string]string{"a": "pod-a", "b": "pod-b", "c": "pod-c"}, []string{"c"}, map[string]string{"pod-a": "1", "pod-b": "1", "pod-c": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SearchWeights(tc.nodes, tc.away)
			if ok != (tc.want != nil) || !maps.Equal(got, tc.want) {
				t.Errorf("SearchWeights = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}
