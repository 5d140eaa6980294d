package opensearch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

func TestSettingsWritten(t *testing.T) {
	for _, c := range []struct {
		name, method, path, body string
		want                     []WrittenSetting
	}{
		{"an index's settings, flat and nested, a reset among them", http.MethodPut, "/products/_settings",
			`{"index.blocks.write": null, "index": {"refresh_interval": "1s"}, "number_of_replicas": 1}`,
			[]WrittenSetting{{ScopeIndex, "index.blocks.write"}, {ScopeIndex, "index.number_of_replicas"}, {ScopeIndex, "index.refresh_interval"}}},
		{"cluster settings, persistent and transient", http.MethodPut, "/_cluster/settings?flat_settings=true",
			`{"persistent": {"cluster.routing.allocation.enable": "primaries"}, "transient": {"cluster": {"routing": {"allocation": {"exclude": {"_name": "n-0"}}}}}}`,
			[]WrittenSetting{{ScopeClusterPersistent, "cluster.routing.allocation.enable"}, {ScopeClusterTransient, "cluster.routing.allocation.exclude._name"}}},
		{"an index created with settings and mappings", http.MethodPut, "/products",
			`{"settings": {"index.knn": true, "number_of_shards": 2}, "mappings": {"properties": {"v": {"type": "knn_vector"}}}}`,
			[]WrittenSetting{{ScopeIndex, "index.knn"}, {ScopeIndex, "index.number_of_shards"}}},
		{"a clone's settings", http.MethodPost, "/products/_clone/products-2", `{"settings": {"index.blocks.write": true}}`,
			[]WrittenSetting{{ScopeIndex, "index.blocks.write"}}},
		{"a restore's index settings", http.MethodPost, "/_snapshot/repo/snap-1/_restore",
			`{"indices": "products", "index_settings": {"index.vectorpilot_restore": "uid"}}`,
			[]WrittenSetting{{ScopeIndex, "index.vectorpilot_restore"}}},
		{"a mapping is not a setting", http.MethodPut, "/products/_mapping", `{"_meta": {"a": 1}}`, nil},
		{"a search is not a setting", http.MethodPost, "/products/_search", `{"settings": {"x": 1}}`, nil},
		{"a read of settings writes none", http.MethodGet, "/_cluster/settings", "", nil},
	} {
		if got := SettingsWritten(c.method, c.path, []byte(c.body)); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSettingsRulesAreDocumentedRequests: every request shape that writes settings is one
// the role describes.
func TestSettingsRulesAreDocumentedRequests(t *testing.T) {
	for _, r := range settingsRules {
		if !slices.ContainsFunc(requestRules, func(q requestRule) bool { return q.method == r.method && q.pattern == r.pattern }) {
			t.Errorf("%s %s writes settings but is not in requestRules", r.method, r.pattern)
		}
	}
}

// TestClientReportsTheSettingsItWrites: the observer sees the settings a real request of
// the client writes, read from the body the client sends.
func TestClientReportsTheSettingsItWrites(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"acknowledged": true}`))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var sent []SentRequest
	c, err := New(Config{Endpoint: srv.URL, OnRequest: func(r SentRequest) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.PutSettings(context.Background(), "products", map[string]any{"index.blocks.write": true}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	i := slices.IndexFunc(sent, func(r SentRequest) bool { return r.Path == "/products/_settings" })
	if i < 0 || !slices.Equal(sent[i].Settings, []WrittenSetting{{ScopeIndex, "index.blocks.write"}}) {
		t.Errorf("observed %+v, want the PUT of index.blocks.write", sent)
	}
}
