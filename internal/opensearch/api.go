package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClusterInfo is what the root endpoint and cluster health tell about a cluster.
type ClusterInfo struct {
	Version string
	Health  string
	Nodes   int
	// UUID is the cluster's UUID, "_na_" before it has formed.
	UUID string
	// ShardsMoving are the shards initializing or relocating: health is about to change.
	ShardsMoving int
	// ShardsUnassigned are the shard copies no node holds.
	ShardsUnassigned int
}

// Info reads the cluster's version and health.
func (c *Client) Info(ctx context.Context) (ClusterInfo, error) {
	var root struct {
		ClusterUUID string `json:"cluster_uuid"`
		Version     struct {
			Number string `json:"number"`
		} `json:"version"`
	}
	if err := c.do(ctx, http.MethodGet, "/", nil, &root); err != nil {
		return ClusterInfo{}, err
	}
	var health struct {
		Status        string `json:"status"`
		NumberOfNodes int    `json:"number_of_nodes"`
		Initializing  int    `json:"initializing_shards"`
		Relocating    int    `json:"relocating_shards"`
		Unassigned    int    `json:"unassigned_shards"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/health", nil, &health); err != nil {
		return ClusterInfo{}, err
	}
	return ClusterInfo{Version: root.Version.Number, Health: health.Status, Nodes: health.NumberOfNodes, UUID: root.ClusterUUID,
		ShardsMoving: health.Initializing + health.Relocating, ShardsUnassigned: health.Unassigned}, nil
}

// PluginVersion is the version of the named plugin on the first node that has it, or ""
// when no node has it.
func (c *Client) PluginVersion(ctx context.Context, name string) (string, error) {
	var plugins []struct {
		Component string `json:"component"`
		Version   string `json:"version"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cat/plugins?format=json", nil, &plugins); err != nil {
		return "", err
	}
	for _, p := range plugins {
		if p.Component == name {
			return p.Version, nil
		}
	}
	return "", nil
}

// Index is the live state of an index: flat settings and the mapping's properties.
type Index struct {
	// Name is the concrete index's: GetIndex of an alias pointing at one index reads that
	// index.
	Name       string
	UUID       string
	Settings   map[string]string
	Properties map[string]json.RawMessage
	// Meta is the mapping's _meta: free-form values OpenSearch stores and never reads.
	Meta map[string]any
	// Aliases are the aliases pointing at the index.
	Aliases []string
}

// Clone is a copy of idx whose maps and slice are its own (values in Meta are shared).
func (idx *Index) Clone() *Index {
	c := *idx
	c.Settings, c.Properties, c.Meta, c.Aliases = maps.Clone(idx.Settings), maps.Clone(idx.Properties), maps.Clone(idx.Meta), slices.Clone(idx.Aliases)
	return &c
}

// GetIndex reads an index's settings (flat, defaults left out), mapping and aliases; name
// may be an alias of one index. A missing index is an error for which IsNotFound holds; an
// alias of several indexes is an error too (the operator never makes one).
func (c *Client) GetIndex(ctx context.Context, name string) (*Index, error) {
	indexes, err := c.getIndexes(ctx, name)
	if err != nil {
		return nil, err
	}
	switch len(indexes) {
	case 0:
		return nil, &APIError{Status: 404, Type: "index_not_found_exception", Reason: "no such index [" + name + "]"}
	case 1:
		return indexes[0], nil
	}
	return nil, fmt.Errorf("%s is an alias of %d indexes, not of one", name, len(indexes))
}

// getIndexes reads every index name stands for (an index, or an alias of any number),
// sorted by name.
func (c *Client) getIndexes(ctx context.Context, name string) ([]*Index, error) {
	var resp map[string]struct {
		Aliases  map[string]json.RawMessage `json:"aliases"`
		Settings map[string]any             `json:"settings"`
		Mappings struct {
			Meta       map[string]any             `json:"_meta"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"mappings"`
	}
	if err := c.do(ctx, http.MethodGet, "/"+url.PathEscape(name)+"?flat_settings=true", nil, &resp); err != nil {
		return nil, err
	}
	out := make([]*Index, 0, len(resp))
	for concrete, got := range resp {
		idx := &Index{Name: concrete, Settings: map[string]string{}, Properties: got.Mappings.Properties, Meta: got.Mappings.Meta}
		for a := range got.Aliases {
			idx.Aliases = append(idx.Aliases, a)
		}
		slices.Sort(idx.Aliases)
		for k, v := range got.Settings {
			idx.Settings[k] = fmt.Sprint(v)
		}
		idx.UUID = idx.Settings["index.uuid"]
		out = append(out, idx)
	}
	slices.SortFunc(out, func(a, b *Index) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// CreateIndex creates an index with the given settings, mapping properties and _meta.
func (c *Client) CreateIndex(ctx context.Context, name string, settings, properties, meta map[string]any) error {
	body := map[string]any{"settings": settings, "mappings": map[string]any{"properties": properties, "_meta": meta}}
	return c.do(ctx, http.MethodPut, "/"+url.PathEscape(name), body, nil)
}

// CreateAliasedIndex creates an index as CreateIndex does, behind alias: the alias points
// at it and takes its writes.
func (c *Client) CreateAliasedIndex(ctx context.Context, name, alias string, settings, properties, meta map[string]any) error {
	body := map[string]any{"settings": settings, "mappings": map[string]any{"properties": properties, "_meta": meta},
		"aliases": map[string]any{alias: map[string]any{"is_write_index": true}}}
	return c.do(ctx, http.MethodPut, "/"+url.PathEscape(name), body, nil)
}

// PutMeta replaces an index mapping's _meta.
func (c *Client) PutMeta(ctx context.Context, name string, meta map[string]any) error {
	return c.do(ctx, http.MethodPut, "/"+url.PathEscape(name)+"/_mapping", map[string]any{"_meta": meta}, nil)
}

// PutSettings updates dynamic index settings in one request.
func (c *Client) PutSettings(ctx context.Context, name string, settings map[string]any) error {
	return c.do(ctx, http.MethodPut, "/"+url.PathEscape(name)+"/_settings", settings, nil)
}

// SetWriteBlock makes an index refuse writes (index.blocks.write), or lifts the block.
// The block is added with the index block API, which returns once every shard has finished
// the writes it admitted before the block: nothing is written after this call returns. Set
// through _settings instead, a write admitted just before it can still be processed after
// the setting is acknowledged. Blocking a blocked index again succeeds: the block was added
// before, and the writes drained then.
func (c *Client) SetWriteBlock(ctx context.Context, name string, blocked bool) error {
	if !blocked {
		return c.PutSettings(ctx, name, WriteBlock(false))
	}
	var resp struct {
		Acknowledged       bool `json:"acknowledged"`
		ShardsAcknowledged bool `json:"shards_acknowledged"`
		// The indexes the call blocked; one blocked already is left out.
		Indices []struct {
			Name string `json:"name"`
		} `json:"indices"`
	}
	if err := c.do(ctx, http.MethodPut, "/"+url.PathEscape(name)+"/_block/write", nil, &resp); err != nil {
		return err
	}
	if !resp.Acknowledged || !resp.ShardsAcknowledged && len(resp.Indices) > 0 {
		return fmt.Errorf("write block of %s: not acknowledged by every shard (acknowledged %v, shards_acknowledged %v)", name, resp.Acknowledged, resp.ShardsAcknowledged)
	}
	return nil
}

// WriteBlock is the settings body that sets an index's write block, or removes it (null).
func WriteBlock(blocked bool) map[string]any {
	if blocked {
		return map[string]any{WriteBlockSetting: true}
	}
	return map[string]any{WriteBlockSetting: nil}
}

// WriteBlockSetting is the index setting that makes an index refuse writes.
const WriteBlockSetting = "index.blocks.write"

// PutMapping adds fields to an index's mapping.
func (c *Client) PutMapping(ctx context.Context, name string, properties map[string]any) error {
	return c.do(ctx, http.MethodPut, "/"+url.PathEscape(name)+"/_mapping", map[string]any{"properties": properties}, nil)
}

// DeleteIndex deletes an index. Deleting a missing index is not an error.
func (c *Client) DeleteIndex(ctx context.Context, name string) error {
	err := c.do(ctx, http.MethodDelete, "/"+url.PathEscape(name), nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// OperatorStatsGroup is the search stats group of the operator's own searches (live
// recall measurements): Stats leaves them out of IndexStats.Searches, the clients' load.
const OperatorStatsGroup = "vectorpilot-recall"

// IndexStats are an index's size figures.
type IndexStats struct {
	Health         string
	DocsCount      int64
	Segments       int64
	StoreSizeBytes int64
	// Searches is the number of searches the index has served its clients: the query
	// phase counter over all shard copies, less the operator's own (OperatorStatsGroup),
	// divided by the primary shard count.
	Searches int64
	// SearchMillis is the time the index's shards spent in the query phase of those
	// searches, counted as Searches is (less the operator's, over the primary count): its
	// rate of change is how many searches are in flight on average (Little's law).
	SearchMillis int64
	// ActivePrimaries is the number of primary shards that are started. Health alone does
	// not say it: an index being restored reports yellow before any primary is active.
	ActivePrimaries int64
}

// Stats reads an index's health, document and segment counts (primaries) and store size.
func (c *Client) Stats(ctx context.Context, name string) (IndexStats, error) {
	var stats struct {
		All statsBody `json:"_all"`
	}
	if err := c.do(ctx, http.MethodGet, "/"+url.PathEscape(name)+"/_stats/"+statsMetrics, nil, &stats); err != nil {
		return IndexStats{}, err
	}
	var health healthBody
	if err := c.do(ctx, http.MethodGet, "/_cluster/health/"+url.PathEscape(name), nil, &health); err != nil {
		return IndexStats{}, err
	}
	return stats.All.figures(health), nil
}

// statsMetrics are the index statistics IndexStats is made of, with the operator's own
// searches in a group of their own.
const statsMetrics = "docs,segments,store,search?groups=" + OperatorStatsGroup

// statsBody is an index's statistics as the stats API gives them.
type statsBody struct {
	Primaries struct {
		Docs struct {
			Count int64 `json:"count"`
		} `json:"docs"`
		Segments struct {
			Count int64 `json:"count"`
		} `json:"segments"`
	} `json:"primaries"`
	Total struct {
		Store struct {
			SizeInBytes int64 `json:"size_in_bytes"`
		} `json:"store"`
		Search struct {
			QueryTotal  int64 `json:"query_total"`
			QueryMillis int64 `json:"query_time_in_millis"`
			Groups      map[string]struct {
				QueryTotal  int64 `json:"query_total"`
				QueryMillis int64 `json:"query_time_in_millis"`
			} `json:"groups"`
		} `json:"search"`
		// QueryCache is read by Figures only.
		QueryCache struct {
			HitCount  int64 `json:"hit_count"`
			MissCount int64 `json:"miss_count"`
		} `json:"query_cache"`
	} `json:"total"`
}

// healthBody is an index's health as the cluster health API gives it.
type healthBody struct {
	Status          string `json:"status"`
	ActivePrimaries int64  `json:"active_primary_shards"`
}

// figures are the index's IndexStats.
func (b statsBody) figures(health healthBody) IndexStats {
	search := b.Total.Search
	searches := search.QueryTotal - search.Groups[OperatorStatsGroup].QueryTotal
	millis := search.QueryMillis - search.Groups[OperatorStatsGroup].QueryMillis
	if health.ActivePrimaries > 0 {
		searches /= health.ActivePrimaries
		millis /= health.ActivePrimaries
	}
	return IndexStats{Health: health.Status, DocsCount: b.Primaries.Docs.Count, Segments: b.Primaries.Segments.Count, StoreSizeBytes: b.Total.Store.SizeInBytes,
		Searches: searches, SearchMillis: millis, ActivePrimaries: health.ActivePrimaries}
}

// Refresh makes recent writes searchable on every copy of an index's shards, and returns
// once they are. Under document replication a refresh does that on each copy. Under
// segment replication (every index of a remote-backed cluster) it refreshes the primaries
// only; a replica searches the new segments once it has copied them, and a search it serves
// meanwhile (any search, a _reindex's or a count's, may go to a replica) misses those
// writes. So for such an index with replicas Refresh waits until each replica has caught
// up with its primary since the call.
func (c *Client) Refresh(ctx context.Context, name string) error {
	if err := c.do(ctx, http.MethodPost, "/"+url.PathEscape(name)+"/_refresh", nil, nil); err != nil {
		return err
	}
	indexes, err := c.getIndexes(ctx, name)
	if err != nil {
		return err
	}
	var replicated []string
	for _, idx := range indexes {
		if idx.Settings["index.replication.type"] == "SEGMENT" && idx.Settings["index.number_of_replicas"] != "0" {
			replicated = append(replicated, idx.Name)
		}
	}
	if len(replicated) == 0 {
		return nil
	}
	return c.waitForReplicas(ctx, strings.Join(replicated, ","))
}

// replicaCatchUp bounds Refresh's wait for segment-replication replicas; a replica that
// copies slower is an error to retry later, not a search to serve stale.
const replicaCatchUp = time.Minute

// waitForReplicas waits until every replica of indexes (a comma-separated list) has been
// seen with no checkpoint behind its primary: caught up once after the refresh, it searches
// all the refresh made searchable, whatever its primary refreshes next.
func (c *Client) waitForReplicas(ctx context.Context, indexes string) error {
	caughtUp := map[string]bool{}
	deadline := time.Now().Add(replicaCatchUp)
	for {
		var rows []struct {
			Shard  string `json:"shardId"`
			Node   string `json:"target_node"`
			Behind string `json:"checkpoints_behind"`
		}
		if err := c.do(ctx, http.MethodGet, "/_cat/segment_replication/"+url.PathEscape(indexes)+"?format=json&h=shardId,target_node,checkpoints_behind", nil, &rows); err != nil {
			return err
		}
		var behind []string
		for _, r := range rows {
			copyOf := r.Shard + " on " + r.Node
			caughtUp[copyOf] = caughtUp[copyOf] || r.Behind == "0"
			if !caughtUp[copyOf] {
				behind = append(behind, copyOf+" "+r.Behind+" checkpoints behind")
			}
		}
		if len(behind) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: replicas have not caught up with their primaries %s after a refresh: %s", indexes, replicaCatchUp, strings.Join(behind, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ForceMerge merges an index down to at most maxSegments segments per shard.
func (c *Client) ForceMerge(ctx context.Context, name string, maxSegments int) error {
	return c.do(ctx, http.MethodPost, "/"+url.PathEscape(name)+"/_forcemerge?max_num_segments="+strconv.Itoa(maxSegments), nil, nil)
}

// BulkError is a bulk request in which some items failed.
type BulkError struct {
	Failed int
	First  string
	// Rejected are the failed items OpenSearch refused for now (429: a full write queue,
	// or the indexing-pressure limit): the same items may go through later.
	Rejected int
}

// Retryable says every failed item was only rejected for now.
func (e *BulkError) Retryable() bool { return e.Failed > 0 && e.Rejected == e.Failed }

func (e *BulkError) Error() string {
	return fmt.Sprintf("bulk: %d items failed, first: %s", e.Failed, e.First)
}

// Bulk sends one NDJSON bulk body. Item failures come back as a *BulkError.
func (c *Client) Bulk(ctx context.Context, ndjson []byte) error {
	var resp struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			Status int `json:"status"`
			Error  *struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"error"`
		} `json:"items"`
	}
	if err := c.do(ctx, http.MethodPost, "/_bulk", ndjson, &resp); err != nil {
		return err
	}
	if !resp.Errors {
		return nil
	}
	be := &BulkError{}
	for _, item := range resp.Items {
		for op, r := range item {
			// A create of an id that exists leaves that document as it is, as asked.
			if r.Error != nil && (op != "create" || r.Status != http.StatusConflict) {
				if be.Failed == 0 {
					be.First = r.Error.Type + ": " + r.Error.Reason
				}
				be.Failed++
				if r.Status == http.StatusTooManyRequests {
					be.Rejected++
				}
			}
		}
	}
	if be.Failed == 0 {
		return nil
	}
	return be
}

// Hit is one search result.
type Hit struct {
	ID    string  `json:"_id"`
	Score float64 `json:"_score"`
	// Source is the document's _source, when the search asked for it.
	Source json.RawMessage `json:"_source"`
}

// SearchResult is the part of a search answer the operator reads.
type SearchResult struct {
	TookMs int64
	Hits   []Hit
}

// Search runs a query DSL body against an index.
func (c *Client) Search(ctx context.Context, index string, body any) (SearchResult, error) {
	return c.SearchPreferring(ctx, index, body, "")
}

// OnlyNodes is the search preference that serves every shard from a copy on the nodes the
// specification selects (e.g. "vectorpilot_pool:hot"); OpenSearch fails the search when
// those nodes hold no copy of a shard.
func OnlyNodes(nodes string) string { return "_only_nodes:" + nodes }

// SearchPreferring runs a search whose shard copies the preference chooses ("" lets
// OpenSearch choose).
func (c *Client) SearchPreferring(ctx context.Context, index string, body any, preference string) (SearchResult, error) {
	var resp struct {
		Took int64 `json:"took"`
		Hits struct {
			Hits []Hit `json:"hits"`
		} `json:"hits"`
	}
	path := "/" + url.PathEscape(index) + "/_search"
	if preference != "" {
		path += "?preference=" + url.QueryEscape(preference)
	}
	if err := c.do(ctx, http.MethodPost, path, body, &resp); err != nil {
		return SearchResult{}, err
	}
	return SearchResult{TookMs: resp.Took, Hits: resp.Hits.Hits}, nil
}

// KNNQuery is the query DSL body of a k-NN search on one vector field, returning only ids.
func KNNQuery(field string, vector []float32, k int) map[string]any {
	return map[string]any{
		"size":    k,
		"_source": false,
		"query":   map[string]any{"knn": map[string]any{field: map[string]any{"vector": vector, "k": k}}},
	}
}

// ShardCopy is one shard copy as _cat/shards lists it.
type ShardCopy struct {
	Index  string `json:"index"`
	Shard  string `json:"shard"`
	PriRep string `json:"prirep"`
	State  string `json:"state"`
	Node   string `json:"node"`
	// RelocatingTo is the node a RELOCATING copy moves to.
	RelocatingTo string `json:"-"`
}

// Shards lists every shard copy of the cluster and the node holding it. _cat/shards names
// a relocating copy's nodes in one column, "source -> address id target"; it is split.
func (c *Client) Shards(ctx context.Context) ([]ShardCopy, error) {
	var out []ShardCopy
	if err := c.do(ctx, http.MethodGet, "/_cat/shards?format=json&h=index,shard,prirep,state,node", nil, &out); err != nil {
		return nil, err
	}
	for i := range out {
		if from, to, ok := strings.Cut(out[i].Node, " -> "); ok {
			out[i].Node = strings.TrimSpace(from)
			if f := strings.Fields(to); len(f) > 0 {
				out[i].RelocatingTo = f[len(f)-1]
			}
		}
	}
	return out, nil
}

// IndexSettings are every index's own settings, flat ("index.version.created"), hidden and
// system indexes included: the cluster state's metadata, which needs no index permission.
func (c *Client) IndexSettings(ctx context.Context) (map[string]map[string]any, error) {
	var state struct {
		Metadata struct {
			Indices map[string]struct {
				Settings map[string]any `json:"settings"`
			} `json:"indices"`
		} `json:"metadata"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/state/metadata?flat_settings=true&filter_path=metadata.indices.*.settings", nil, &state); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(state.Metadata.Indices))
	for name, index := range state.Metadata.Indices {
		out[name] = index.Settings
	}
	return out, nil
}

// Voting is the cluster's voting configuration and the nodes in the cluster, by name.
type Voting struct {
	Voters, Joined, Excluded []string
	// Manager is the elected cluster manager.
	Manager string
}

// Voting reads the last committed voting configuration, its exclusions, the nodes that
// joined and the elected cluster manager, from the elected cluster manager's cluster state
// (one request).
func (c *Client) Voting(ctx context.Context) (Voting, error) {
	var state struct {
		Manager  string `json:"cluster_manager_node"`
		Metadata struct {
			Coordination struct {
				LastCommittedConfig []string `json:"last_committed_config"`
				Exclusions          []struct {
					NodeName string `json:"node_name"`
				} `json:"voting_config_exclusions"`
			} `json:"cluster_coordination"`
		} `json:"metadata"`
		Nodes map[string]struct {
			Name string `json:"name"`
		} `json:"nodes"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/state/metadata,nodes,cluster_manager_node?filter_path=cluster_manager_node,metadata.cluster_coordination,nodes.*.name", nil, &state); err != nil {
		return Voting{}, err
	}
	var v Voting
	for _, id := range state.Metadata.Coordination.LastCommittedConfig {
		// A voter that left the cluster is not in nodes; its ID stands for it, which is
		// never a pod name.
		name := id
		if n, ok := state.Nodes[id]; ok {
			name = n.Name
		}
		v.Voters = append(v.Voters, name)
	}
	for _, n := range state.Nodes {
		v.Joined = append(v.Joined, n.Name)
	}
	for _, e := range state.Metadata.Coordination.Exclusions {
		v.Excluded = append(v.Excluded, e.NodeName)
	}
	slices.Sort(v.Joined)
	v.Manager = state.Nodes[state.Manager].Name
	return v, nil
}

// ExcludeVoter takes a cluster-manager-eligible node out of the voting configuration;
// OpenSearch answers once it is out.
func (c *Client) ExcludeVoter(ctx context.Context, node string) error {
	return c.do(ctx, http.MethodPost, "/_cluster/voting_config_exclusions?node_names="+url.QueryEscape(node), nil, nil)
}

// ClearVotingExclusions removes every voting configuration exclusion.
func (c *Client) ClearVotingExclusions(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/_cluster/voting_config_exclusions?wait_for_removal=false", nil, nil)
}

// PersistentClusterSettings reads the persistent cluster settings, flat (a missing key is
// an unset setting); a list setting is its values joined by commas, the form a PUT takes
// back.
func (c *Client) PersistentClusterSettings(ctx context.Context) (map[string]string, error) {
	var out struct {
		Persistent map[string]any `json:"persistent"`
	}
	if err := c.do(ctx, http.MethodGet, "/_cluster/settings?flat_settings=true", nil, &out); err != nil {
		return nil, err
	}
	settings := make(map[string]string, len(out.Persistent))
	for k, v := range out.Persistent {
		if list, ok := v.([]any); ok {
			values := make([]string, len(list))
			for i, e := range list {
				values[i] = fmt.Sprint(e)
			}
			settings[k] = strings.Join(values, ",")
			continue
		}
		settings[k] = fmt.Sprint(v)
	}
	return settings, nil
}

// Flush flushes every index, so a restarted node recovers its shards from disk quickly.
func (c *Client) Flush(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/_flush", nil, nil)
}

// SearchRouting is the cluster's weighted shard routing on one awareness attribute: the
// weight of each of its values, and the version a change must name.
type SearchRouting struct {
	Weights map[string]string `json:"weights"`
	Version int64             `json:"_version"`
}

// SearchWeights reads the weighted shard routing on attribute, which must be an awareness
// attribute; Version is -1 when none was ever set.
func (c *Client) SearchWeights(ctx context.Context, attribute string) (SearchRouting, error) {
	// OpenSearch leaves _version out while no weights were ever set, and wants -1 then.
	out := SearchRouting{Version: -1}
	err := c.do(ctx, http.MethodGet, "/_cluster/routing/awareness/"+url.PathEscape(attribute)+"/weights", nil, &out)
	return out, err
}

// PutSearchWeights replaces the weighted shard routing; version is the current one (-1 when
// none was ever set), as OpenSearch checks it.
func (c *Client) PutSearchWeights(ctx context.Context, attribute string, weights map[string]string, version int64) error {
	return c.do(ctx, http.MethodPut, "/_cluster/routing/awareness/"+url.PathEscape(attribute)+"/weights",
		map[string]any{"weights": weights, "_version": version}, nil)
}

// DeleteSearchWeights removes the weighted shard routing of version.
func (c *Client) DeleteSearchWeights(ctx context.Context, version int64) error {
	return c.do(ctx, http.MethodDelete, "/_cluster/routing/awareness/weights", map[string]any{"_version": version}, nil)
}

// ExactKNNQuery is a brute-force k-NN query: the k-NN plugin's scoring script over every
// document, the exact counterpart of KNNQuery. space is the field's space type.
func ExactKNNQuery(field string, vector []float32, k int, space string) map[string]any {
	return map[string]any{
		"size":    k,
		"_source": false,
		"query": map[string]any{"script_score": map[string]any{
			"query": map[string]any{"match_all": map[string]any{}},
			"script": map[string]any{"source": "knn_score", "lang": "knn",
				"params": map[string]any{"field": field, "query_value": vector, "space_type": space}},
		}},
	}
}

// SegmentFileBytes are the bytes of an index's primary segment files by Lucene file
// extension (vec: raw vectors, veq: quantized vectors, vex: the HNSW graph, …).
func (c *Client) SegmentFileBytes(ctx context.Context, name string) (map[string]int64, error) {
	var stats struct {
		All struct {
			Primaries struct {
				Segments struct {
					FileSizes map[string]struct {
						SizeInBytes int64 `json:"size_in_bytes"`
					} `json:"file_sizes"`
				} `json:"segments"`
			} `json:"primaries"`
		} `json:"_all"`
	}
	if err := c.do(ctx, http.MethodGet, "/"+url.PathEscape(name)+"/_stats/segments?include_segment_file_sizes=true", nil, &stats); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for ext, f := range stats.All.Primaries.Segments.FileSizes {
		out[ext] = f.SizeInBytes
	}
	return out, nil
}

// StuckShard says why a started shard copy cannot leave its node, from the cluster
// allocation explain API: empty when it can move (or may stay).
func (c *Client) StuckShard(ctx context.Context, index string, shard int, primary bool, node string) (string, error) {
	e, err := c.explainAllocation(ctx, map[string]any{"index": index, "shard": shard, "primary": primary, "current_node": node})
	if err != nil {
		return "", err
	}
	return stuckReason(e.CanMove, e.MoveExplanation, e.refusals()), nil
}

// UnplaceableShard says why an unassigned copy of a shard cannot be placed on any node,
// from the cluster allocation explain API: empty while allocation may still place it
// (allowed, throttled, delayed after a node left, or waiting for shard data).
func (c *Client) UnplaceableShard(ctx context.Context, index string, shard int, primary bool) (string, error) {
	e, err := c.explainAllocation(ctx, map[string]any{"index": index, "shard": shard, "primary": primary})
	if err != nil {
		return "", err
	}
	return stuckReason(e.CanAllocate, e.AllocateExplanation, e.refusals()), nil
}

// allocationExplanation is the allocation explain API's answer for one shard copy.
type allocationExplanation struct {
	CanMove             string `json:"can_move_to_other_node"`
	MoveExplanation     string `json:"move_explanation"`
	CanAllocate         string `json:"can_allocate"`
	AllocateExplanation string `json:"allocate_explanation"`
	Nodes               []struct {
		Name     string    `json:"node_name"`
		Deciders []Refusal `json:"deciders"`
	} `json:"node_allocation_decisions"`
}

func (c *Client) explainAllocation(ctx context.Context, body map[string]any) (allocationExplanation, error) {
	var e allocationExplanation
	err := c.do(ctx, http.MethodPost, "/_cluster/allocation/explain", body, &e)
	return e, err
}

// refusals are the deciders' answers, each with its node.
func (e allocationExplanation) refusals() []Refusal {
	var out []Refusal
	for _, n := range e.Nodes {
		for _, d := range n.Deciders {
			d.Node = n.Name
			out = append(out, d)
		}
	}
	return out
}

// Refusal is one allocation decider's answer for one node.
type Refusal struct {
	Node        string `json:"-"`
	Decider     string `json:"decider"`
	Decision    string `json:"decision"`
	Explanation string `json:"explanation"`
}

// stuckReasonNodes is how many other nodes' refusals a stuck shard's reason names.
const stuckReasonNodes = 2

// stuckReason is the explanation of a copy that cannot move (or be placed), with the
// first refusal (NO) of each node it could go to, for the first few nodes; "" when the
// decision is anything but no.
func stuckReason(decision, explanation string, refusals []Refusal) string {
	if decision != "no" {
		return ""
	}
	parts := []string{explanation}
	seen := map[string]bool{}
	for _, r := range refusals {
		if r.Decision != "NO" || seen[r.Node] || len(seen) == stuckReasonNodes {
			continue
		}
		seen[r.Node] = true
		parts = append(parts, fmt.Sprintf("%s: [%s] %s", r.Node, r.Decider, r.Explanation))
	}
	return strings.Join(parts, "; ")
}
