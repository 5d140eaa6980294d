package opensearch

import (
	"net/http"
	"strings"
)

// Permissions are the OpenSearch security plugin's action names one request needs: cluster
// permissions, and index permissions on the index (or indexes) the path names.
type Permissions struct {
	Cluster, Index []string
}

// requestRule maps one request shape the client sends to the actions it needs. Segments
// of the pattern are literals, {index} (an index name or a comma-separated list of them)
// or {name} (a repository or snapshot name).
type requestRule struct {
	method, pattern string
	Permissions
}

// requestRules are every request the client sends. A request matching none is a request
// nobody has written down the permissions of: PermissionsOf says so, and a test fails.
var requestRules = []requestRule{
	{http.MethodGet, "/", Permissions{Cluster: []string{"cluster:monitor/main"}}},
	{http.MethodGet, "/_cluster/health", Permissions{Cluster: []string{"cluster:monitor/health"}}},
	{http.MethodGet, "/_cluster/health/{index}", Permissions{Cluster: []string{"cluster:monitor/health"}}},
	{http.MethodGet, "/_cluster/settings", Permissions{Cluster: []string{"cluster:monitor/state"}}},
	// Why a draining node's shard copy does not move (the scale-down's message), why a copy
	// a benchmark variant waits for cannot be placed.
	{http.MethodPost, "/_cluster/allocation/explain", Permissions{Cluster: []string{"cluster:monitor/allocation/explain"}}},
	{http.MethodPut, "/_cluster/settings", Permissions{Cluster: []string{"cluster:admin/settings/update"}}},
	{http.MethodGet, "/_cluster/state/{name}", Permissions{Cluster: []string{"cluster:monitor/state"}}},
	{http.MethodPost, "/_cluster/voting_config_exclusions", Permissions{Cluster: []string{"cluster:admin/voting_config/add_exclusions"}}},
	{http.MethodDelete, "/_cluster/voting_config_exclusions", Permissions{Cluster: []string{"cluster:admin/voting_config/clear_exclusions"}}},
	// Weighted shard routing (ClusterGetWeightedRoutingAction and its put and delete).
	{http.MethodGet, "/_cluster/routing/awareness/{name}/weights", Permissions{Cluster: []string{"cluster:admin/routing/awareness/weights/get"}}},
	{http.MethodPut, "/_cluster/routing/awareness/{name}/weights", Permissions{Cluster: []string{"cluster:admin/routing/awareness/weights/put"}}},
	{http.MethodDelete, "/_cluster/routing/awareness/weights", Permissions{Cluster: []string{"cluster:admin/routing/awareness/weights/delete"}}},
	{http.MethodGet, "/_cat/plugins", Permissions{Cluster: []string{"cluster:monitor/state", "cluster:monitor/nodes/info"}}},
	{http.MethodGet, "/_cat/shards", Permissions{Cluster: []string{"cluster:monitor/state"}, Index: []string{"indices:monitor/stats"}}},
	{http.MethodGet, "/_nodes/os", Permissions{Cluster: []string{"cluster:monitor/nodes/info"}}},
	{http.MethodGet, "/_nodes/{name}/os", Permissions{Cluster: []string{"cluster:monitor/nodes/info"}}},
	{http.MethodGet, "/_nodes/settings,jvm", Permissions{Cluster: []string{"cluster:monitor/nodes/info"}}},
	{http.MethodGet, "/_nodes/{name}/settings,jvm", Permissions{Cluster: []string{"cluster:monitor/nodes/info"}}},
	{http.MethodGet, "/_nodes/stats/{name}", Permissions{Cluster: []string{"cluster:monitor/nodes/stats"}}},
	// opensearch-go itself polls its node's JVM and breaker statistics (load shedding),
	// every few seconds per client.
	{http.MethodGet, "/_nodes/{name}/stats/{name}", Permissions{Cluster: []string{"cluster:monitor/nodes/stats"}}},
	{http.MethodGet, "/_plugins/_knn/stats", Permissions{Cluster: []string{"cluster:admin/knn_stats_action"}}},
	// IVF models: training (the REST route goes through the training job router, which
	// reads the sample index as the caller), reading and deleting.
	{http.MethodGet, "/_plugins/_knn/models/{name}", Permissions{Cluster: []string{"cluster:admin/knn_get_model_action"}}},
	{http.MethodPost, "/_plugins/_knn/models/{name}/_train", Permissions{Cluster: []string{"cluster:admin/knn_training_job_router_action", "cluster:admin/knn_training_model_action"}, Index: []string{"indices:data/read/search"}}},
	{http.MethodDelete, "/_plugins/_knn/models/{name}", Permissions{Cluster: []string{"cluster:admin/knn_delete_model_action"}}},
	{http.MethodPost, "/_flush", Permissions{Index: []string{"indices:admin/flush"}}},
	{http.MethodPost, "/_bulk", Permissions{Cluster: []string{"indices:data/write/bulk"}, Index: []string{"indices:data/write/bulk[s]", "indices:data/write/index", "indices:data/write/delete"}}},
	// Blue/green rebuilds: the copy (_reindex reads the source and writes the target as
	// the operator), its task, the clone of an alias-less index, the alias swap, the graph
	// warm-up, and the count and id checks of the cut-over.
	{http.MethodPost, "/_reindex", Permissions{Cluster: []string{"indices:data/write/reindex"}, Index: []string{"indices:data/read/search", "indices:data/write/bulk[s]", "indices:data/write/index"}}},
	{http.MethodGet, "/_tasks", Permissions{Cluster: []string{"cluster:monitor/tasks/lists"}}},
	{http.MethodGet, "/_tasks/{name}", Permissions{Cluster: []string{"cluster:monitor/task/get"}}},
	{http.MethodPost, "/_tasks/{name}/_cancel", Permissions{Cluster: []string{"cluster:admin/tasks/cancel"}}},
	{http.MethodPost, "/{index}/_clone/{name}", Permissions{Index: []string{"indices:admin/resize", "indices:admin/create"}}},
	{http.MethodPost, "/_aliases", Permissions{Index: []string{"indices:admin/aliases", "indices:admin/delete"}}},
	{http.MethodGet, "/_plugins/_knn/warmup/{index}", Permissions{Cluster: []string{"cluster:admin/knn_warmup_action"}}},
	{http.MethodPost, "/{index}/_count", Permissions{Index: []string{"indices:data/read/search"}}},
	{http.MethodPost, "/_search/scroll", Permissions{Cluster: []string{"indices:data/read/scroll"}}},
	{http.MethodDelete, "/_search/scroll", Permissions{Cluster: []string{"indices:data/read/scroll/clear"}}},
	{http.MethodPut, "/_snapshot/{name}", Permissions{Cluster: []string{"cluster:admin/repository/put"}}},
	{http.MethodPut, "/_snapshot/{name}/{name}", Permissions{Cluster: []string{"cluster:admin/snapshot/create"}}},
	{http.MethodGet, "/_snapshot/{name}/{name}", Permissions{Cluster: []string{"cluster:admin/snapshot/get"}}},
	{http.MethodGet, "/_snapshot/{name}/{name}/_status", Permissions{Cluster: []string{"cluster:admin/snapshot/status"}}},
	{http.MethodGet, "/_snapshot/_status", Permissions{Cluster: []string{"cluster:admin/snapshot/status"}}},
	{http.MethodDelete, "/_snapshot/{name}/{name}", Permissions{Cluster: []string{"cluster:admin/snapshot/delete"}}},
	// RemoteStoreStatsAction and RestoreRemoteStoreAction (OpenSearch server, action names).
	{http.MethodGet, "/_remotestore/stats/{name}", Permissions{Cluster: []string{"cluster:monitor/_remotestore/stats"}}},
	{http.MethodPost, "/_remotestore/_restore", Permissions{Cluster: []string{"cluster:admin/remotestore/restore"}}},
	{http.MethodPost, "/_snapshot/{name}/{name}/_restore", Permissions{Cluster: []string{"cluster:admin/snapshot/restore"}, Index: []string{"indices:admin/create", "indices:data/write/index"}}},
	{http.MethodGet, "/{index}", Permissions{Index: []string{"indices:admin/get", "indices:admin/mappings/get"}}},
	{http.MethodPut, "/{index}", Permissions{Index: []string{"indices:admin/create"}}},
	{http.MethodDelete, "/{index}", Permissions{Index: []string{"indices:admin/delete"}}},
	{http.MethodPut, "/{index}/_mapping", Permissions{Index: []string{"indices:admin/mapping/put"}}},
	{http.MethodPut, "/{index}/_settings", Permissions{Index: []string{"indices:admin/settings/update"}}},
	// The rebuild's write block, through the index block API, whose shard-level action
	// waits for the writes in flight.
	{http.MethodPut, "/{index}/_block/{name}", Permissions{Index: []string{"indices:admin/block/add", "indices:admin/block/add[s]"}}},
	{http.MethodGet, "/{index}/_stats/{name}", Permissions{Index: []string{"indices:monitor/stats"}}},
	// The catalogue: every index's statistics (the cluster state and health rules above
	// cover its other two requests).
	{http.MethodGet, "/_stats/{name}", Permissions{Index: []string{"indices:monitor/stats"}}},
	{http.MethodGet, "/{index}/_recovery", Permissions{Index: []string{"indices:monitor/recovery"}}},
	// Refresh's wait for segment-replication replicas.
	{http.MethodGet, "/_cat/segment_replication/{index}", Permissions{Index: []string{"indices:monitor/segment_replication"}}},
	{http.MethodPost, "/{index}/_refresh", Permissions{Index: []string{"indices:admin/refresh"}}},
	{http.MethodPost, "/{index}/_forcemerge", Permissions{Index: []string{"indices:admin/forcemerge"}}},
	{http.MethodPost, "/{index}/_search", Permissions{Index: []string{"indices:data/read/search"}}},
}

// PermissionsOf is what a request needs, and false for a request no rule describes.
func PermissionsOf(method, path string) (Permissions, bool) {
	segments := split(path)
	for _, r := range requestRules {
		if r.method == method && matches(split(r.pattern), segments) {
			return r.Permissions, true
		}
	}
	return Permissions{}, false
}

// AllPermissions is the union of every rule's actions: what the operator's role grants.
func AllPermissions() (cluster, index []string) {
	seenC, seenI := map[string]bool{}, map[string]bool{}
	for _, r := range requestRules {
		for _, a := range r.Cluster {
			if !seenC[a] {
				seenC[a] = true
				cluster = append(cluster, a)
			}
		}
		for _, a := range r.Index {
			if !seenI[a] {
				seenI[a] = true
				index = append(index, a)
			}
		}
	}
	return cluster, index
}

// split is a path's segments, its query string dropped.
func split(path string) []string {
	path, _, _ = strings.Cut(path, "?")
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

func matches(pattern, segments []string) bool {
	if len(pattern) != len(segments) {
		return false
	}
	for i, p := range pattern {
		switch p {
		case "{index}":
			// An index name never starts with _ (the API endpoints do).
			if strings.HasPrefix(segments[i], "_") {
				return false
			}
		case "{name}":
		default:
			if p != segments[i] {
				return false
			}
		}
	}
	return true
}
