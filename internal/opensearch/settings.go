package opensearch

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Scopes of a setting, as the owners table (internal/owners) names them.
const (
	ScopeIndex             = "index"
	ScopeClusterPersistent = "cluster (persistent)"
	ScopeClusterTransient  = "cluster (transient)"
)

// WrittenSetting is one setting a request writes (or resets, with null).
type WrittenSetting struct {
	Scope, Key string
}

// SentRequest is one request the client sends, as its observer sees it.
type SentRequest struct {
	Method, Path string
	// Settings are the settings the request writes, read from its body: who writes what
	// is checked from these (controllers' integration suite against internal/owners).
	Settings []WrittenSetting
}

// settingsAt is where a request's body carries settings of one scope: under the key at
// ("" for the body itself).
type settingsAt struct{ scope, at string }

// settingsRules are the requests that write settings, and where in their body. Each is
// also a rule of requestRules (a test checks it).
var settingsRules = []struct {
	method, pattern string
	in              []settingsAt
}{
	{http.MethodPut, "/_cluster/settings", []settingsAt{{ScopeClusterPersistent, "persistent"}, {ScopeClusterTransient, "transient"}}},
	{http.MethodPut, "/{index}/_settings", []settingsAt{{ScopeIndex, ""}}},
	{http.MethodPut, "/{index}", []settingsAt{{ScopeIndex, "settings"}}},
	{http.MethodPost, "/{index}/_clone/{name}", []settingsAt{{ScopeIndex, "settings"}}},
	{http.MethodPost, "/_snapshot/{name}/{name}/_restore", []settingsAt{{ScopeIndex, "index_settings"}}},
}

// settingsRule is where a request's body carries the settings it writes; false for a
// request that writes none (its body is not worth reading).
func settingsRule(method, path string) ([]settingsAt, bool) {
	segments := split(path)
	for _, r := range settingsRules {
		if r.method == method && matches(split(r.pattern), segments) {
			return r.in, true
		}
	}
	return nil, false
}

// SettingsWritten are the settings a request writes, flat ("index.blocks.write"), index
// settings under their full "index." name as OpenSearch stores them, sorted.
func SettingsWritten(method, path string, body []byte) []WrittenSetting {
	in, ok := settingsRule(method, path)
	if !ok {
		return nil
	}
	return settingsIn(in, body)
}

// settingsIn are the settings a body carries where in says.
func settingsIn(in []settingsAt, body []byte) []WrittenSetting {
	var doc map[string]any
	if len(body) == 0 || json.Unmarshal(body, &doc) != nil {
		return nil
	}
	var out []WrittenSetting
	for _, s := range in {
		settings := doc
		if s.at != "" {
			settings, _ = doc[s.at].(map[string]any)
		}
		for _, key := range flatKeys("", settings) {
			if s.scope == ScopeIndex && !strings.HasPrefix(key, "index.") {
				key = "index." + key
			}
			out = append(out, WrittenSetting{Scope: s.scope, Key: key})
		}
	}
	slices.SortFunc(out, func(a, b WrittenSetting) int { return strings.Compare(a.Scope+" "+a.Key, b.Scope+" "+b.Key) })
	return out
}

// flatKeys are the dotted keys of a settings object's leaves (a value or null).
func flatKeys(prefix string, settings map[string]any) []string {
	var out []string
	for k, v := range settings {
		if nested, ok := v.(map[string]any); ok {
			out = append(out, flatKeys(prefix+k+".", nested)...)
			continue
		}
		out = append(out, prefix+k)
	}
	return out
}
