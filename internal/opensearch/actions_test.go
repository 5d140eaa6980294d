package opensearch

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// roleFile is the documented OpenSearch role of the operator's user.
var roleFile = filepath.Join("..", "..", "docs", "security", "operator-role.yml")

// roleYAML renders the role from the request table.
func roleYAML() string {
	cluster, index := AllPermissions()
	var b strings.Builder
	b.WriteString(`# The OpenSearch security role vectorpilot's own user needs on an external cluster: exactly
# the actions of the requests the operator sends (internal/opensearch/actions.go maps each
# request to its actions; a unit test keeps this file equal to that table, and the
# controllers' integration tests fail on any request the operator sends that the table does
# not cover). Create it with the security plugin's API or roles.yml, map the operator's
# user to it, and narrow index_patterns to the indexes your VectorIndexes name
# (spec.indexName, or their object names) — but for indices:monitor/stats, which the
# catalogue of idle indexes asks of every index at once (GET _stats; figures, never
# documents): refused it, each idle index is read on its own at each resync. _flush,
# _cat/shards and the cluster settings are sent only to managed clusters, during rolling
# restarts.
# Regenerate: UPDATE_ROLE=1 go test ./internal/opensearch -run TestDocumentedRole
vectorpilot_operator:
  cluster_permissions:
`)
	for _, a := range cluster {
		fmt.Fprintf(&b, "    - %q\n", a)
	}
	b.WriteString("  index_permissions:\n    - index_patterns: [\"*\"]\n      allowed_actions:\n")
	for _, a := range index {
		fmt.Fprintf(&b, "        - %q\n", a)
	}
	return b.String()
}

// TestDocumentedRoleIsTheRequestTable: the role users are told to create grants exactly the
// actions of the requests the client sends, no more, no less.
func TestDocumentedRoleIsTheRequestTable(t *testing.T) {
	want := roleYAML()
	if os.Getenv("UPDATE_ROLE") != "" {
		if err := os.WriteFile(roleFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(roleFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: run UPDATE_ROLE=1 go test ./internal/opensearch -run TestDocumentedRole", roleFile)
	}
}

func TestPermissionsOfRequests(t *testing.T) {
	cases := []struct {
		method, path string
		want         string
	}{
		{http.MethodGet, "/", "cluster:monitor/main"},
		{http.MethodPut, "/products-v1", "indices:admin/create"},
		{http.MethodGet, "/products-v1", "indices:admin/get"},
		{http.MethodGet, "/a,b,c/_stats/docs,segments,store,search,query_cache", "indices:monitor/stats"},
		{http.MethodPut, "/_snapshot/backups/nightly-1", "cluster:admin/snapshot/create"},
		{http.MethodPut, "/_snapshot/backups", "cluster:admin/repository/put"},
		{http.MethodPost, "/_snapshot/backups/nightly-1/_restore", "cluster:admin/snapshot/restore"},
		{http.MethodGet, "/_nodes/stats/process,jvm,thread_pool", "cluster:monitor/nodes/stats"},
		{http.MethodPost, "/_bulk", "indices:data/write/bulk"},
	}
	for _, c := range cases {
		p, ok := PermissionsOf(c.method, c.path+"?flat_settings=true")
		if !ok || !slices.Contains(append(p.Cluster, p.Index...), c.want) {
			t.Errorf("%s %s: %+v %v, want %s", c.method, c.path, p, ok, c.want)
		}
	}
	for _, unknown := range [][2]string{{http.MethodDelete, "/_cluster/settings"}, {http.MethodPost, "/_security/user/x"}, {http.MethodGet, "/_all/_mapping/field/x"}} {
		if _, ok := PermissionsOf(unknown[0], unknown[1]); ok {
			t.Errorf("%s %s matched a rule; nothing the operator sends looks like it", unknown[0], unknown[1])
		}
	}
}
