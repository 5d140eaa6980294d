// Package owners is the one table of the OpenSearch settings vectorpilot writes: for each,
// which kind and step writes it and when, so that every setting has one owner at a time
// (a test checks the table against the code that builds the requests; docs/concepts.md shows it).
package owners

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Owner says who writes one setting.
type Owner struct {
	// Setting is the key, or a description of a set of keys in backquotes.
	Setting string
	// Scope: index, cluster (persistent) or node (opensearch.yml).
	Scope string
	// Writer is the kind and the reconcile step that writes it.
	Writer string
	// When it is written, and who holds it meanwhile.
	When string
}

const (
	refresh     = "index.refresh_interval"
	replicas    = "index.number_of_replicas"
	efSearch    = "index.knn.algo_param.ef_search"
	indexKNN    = "index.knn"
	shards      = "index.number_of_shards"
	heldByBench = " — except while a BenchmarkRun on the index is Running: the run holds it (below)"
	sweepWhen   = "cell by cell while Running; the sweep puts the value before back as it ends (before the run is marked finished, so the tune step never reads a cell's setting as its own), and `status.restoreSettings` however the run ends"
)

// Table is every setting the operator writes.
var Table = []Owner{
	{indexKNN, opensearch.ScopeIndex, "VectorIndex · ensure index", "at creation only (static)"},
	{shards, opensearch.ScopeIndex, "VectorIndex · ensure index", "at creation only (static; a different live value is a Conflict, never a write)"},
	{"`spec.additionalSettings` keys", opensearch.ScopeIndex, "VectorIndex · ensure index", "at creation only"},
	{replicas, opensearch.ScopeIndex, "VectorIndex · converge settings", "whenever the live value differs from the spec (one PUT of the diff)"},
	{efSearch, opensearch.ScopeIndex, "VectorIndex · converge settings", "whenever the live value differs from the spec's fields (lucene fields search with it; faiss ignores it: a faiss field's ef_search is in its mapping, set at creation)"},
	{refresh, opensearch.ScopeIndex, "VectorIndex · converge settings", "whenever the live value differs from the spec" + heldByBench},
	{refresh, opensearch.ScopeIndex, "BenchmarkRun · run (Local load, or the Workflow's `vectorpilot bench prepare`)", "-1 while loading, then the value before; `status.restoreSettings` is recorded before the first change and put back however the run ends"},
	{indexspec.SettingConcurrentMode, opensearch.ScopeIndex, "VectorIndex · converge settings (value from the spec, or from the tune step's decision)", "whenever the live value differs" + heldByBench},
	{indexspec.SettingMaxSliceCount, opensearch.ScopeIndex, "VectorIndex · converge settings (value from the spec, or from the tune step's decision)", "whenever the live value differs" + heldByBench},
	{indexspec.SettingConcurrentMode, opensearch.ScopeIndex, "BenchmarkRun · run (each cell of the sweep)", sweepWhen},
	{indexspec.SettingMaxSliceCount, opensearch.ScopeIndex, "BenchmarkRun · run (each cell of the sweep)", sweepWhen},
	{opensearch.WriteBlockSetting, opensearch.ScopeIndex, "VectorIndex · rebuild (blue/green, SetWriteBlock)", "true on the serving index from the final copy pass through the alias swap (`status.rebuild.blockedAt`), removed from it if the rebuild fails or is abandoned there; true on the clone kept for a rollback, and on a reused previous index again when its rebuild is abandoned or fails its gate; removed when a rebuild reuses that index as its target"},
	{indexspec.RestoreMarkerSetting, opensearch.ScopeIndex, "VectorIndex · ensure index (restore)", "set by the restore request as OpenSearch creates the index; removed once the index carries the object's `_meta`"},
	{opensearch.AllocationEnableSetting, opensearch.ScopeClusterPersistent, "SearchCluster (managed) · roll out (RestrictAllocationToPrimaries; PutBackClusterSettings)", "`primaries` before a serving node restarts; reset once every node is back (`status.allocationRestricted` until then)"},
	{opensearch.AwarenessSetting, opensearch.ScopeClusterPersistent, "SearchCluster (managed) · roll out (SetAllocationAwareness; PutBackClusterSettings)", "the node attribute added to the user's own before a node restarts with search weights; the value before is recorded in `status.settingsBeforeRestart` and put back once every node is back"},
	{opensearch.ForcedAwarenessSetting(managed.NodeAttribute), opensearch.ScopeClusterPersistent, "SearchCluster (managed) · roll out (SetAllocationAwareness; PutBackClusterSettings)", "every node's value, with the awareness attributes above; put back as they are"},
	{opensearch.AllocationExcludeSetting, opensearch.ScopeClusterPersistent, "SearchCluster (managed) · drain nodes (ExcludeFromAllocation)", "the nodes the operator drains (a shrinking or removed pool; a node holding the only copy of a shard before its restart) are added, and lifted once gone or back; names it did not add are left alone (`status.drainingNodes` records its own)"},
	{"every key of a pool's `opensearch.yml`", "node", "SearchCluster (managed) · apply objects (the pool's ConfigMap)", "on a spec change; static, so pods restart onto it one step at a time"},
}

// Has says whether the table has a row for the setting key of scope.
func Has(scope, key string) bool {
	return slices.ContainsFunc(Table, func(o Owner) bool { return o.Scope == scope && o.Setting == key })
}

// Describe is the table of docs/concepts.md, one Markdown row per entry.
func Describe() string {
	var b strings.Builder
	b.WriteString("| setting | scope | written by (kind · step) | when |\n|---|---|---|---|\n")
	for _, o := range Table {
		setting := o.Setting
		if !strings.Contains(setting, "`") {
			setting = "`" + setting + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", setting, o.Scope, o.Writer, o.When)
	}
	return b.String()
}
