package opensearch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestNamedClusterSettingWrites: each named operation sends the persistent settings it
// names and nothing else; putting back refuses a setting no named operation writes, before
// anything is sent.
func TestNamedClusterSettingWrites(t *testing.T) {
	var bodies []map[string]any
	c := clientOf(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Persistent map[string]any `json:"persistent"`
		}
		if r.Method != http.MethodPut || r.URL.Path != "/_cluster/settings" || json.Unmarshal(raw, &body) != nil {
			t.Errorf("%s %s %s, want PUT /_cluster/settings with persistent settings", r.Method, r.URL.Path, raw)
		}
		bodies = append(bodies, body.Persistent)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"acknowledged": true}`))
	})
	ctx := context.Background()
	forced := ForcedAwarenessSetting("vectorpilot_node")
	for _, tc := range []struct {
		name string
		call func() error
		want map[string]any // nil: refused, nothing sent
	}{
		{"restrict allocation", func() error { return c.RestrictAllocationToPrimaries(ctx) },
			map[string]any{AllocationEnableSetting: "primaries"}},
		{"exclude two nodes", func() error { return c.ExcludeFromAllocation(ctx, []string{"a-0", "a-1"}) },
			map[string]any{AllocationExcludeSetting: "a-0,a-1"}},
		{"exclude none: lifted", func() error { return c.ExcludeFromAllocation(ctx, nil) },
			map[string]any{AllocationExcludeSetting: nil}},
		{"awareness", func() error {
			return c.SetAllocationAwareness(ctx, []string{"zone", "vectorpilot_node"}, "vectorpilot_node", []string{"a-0", "b-0"})
		}, map[string]any{AwarenessSetting: "zone,vectorpilot_node", forced: "a-0,b-0"}},
		{"put back what was read", func() error {
			return c.PutBackClusterSettings(ctx, map[string]any{AllocationEnableSetting: nil, AwarenessSetting: "zone", forced: nil})
		}, map[string]any{AllocationEnableSetting: nil, AwarenessSetting: "zone", forced: nil}},
		{"put back a setting the operator never writes", func() error {
			return c.PutBackClusterSettings(ctx, map[string]any{"cluster.routing.allocation.disk.threshold_enabled": false})
		}, nil},
	} {
		bodies = nil
		err := tc.call()
		switch {
		case tc.want == nil && (err == nil || !strings.Contains(err.Error(), "writes no such setting") || len(bodies) > 0):
			t.Errorf("%s: error %v after %d requests, want refused before any", tc.name, err, len(bodies))
		case tc.want != nil && (err != nil || len(bodies) != 1 || !reflect.DeepEqual(bodies[0], tc.want)):
			t.Errorf("%s: sent %v (error %v), want %v", tc.name, bodies, err, tc.want)
		}
	}
}
