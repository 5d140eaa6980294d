// Package owners is the one table of the OpenSearch settings vectorpilot writes: for each,
// which kind and step writes it and when, so that every setting has one owner at a time
// (a test checks the table against the code that builds the requests; docs/concepts.md shows it).
package owners

import (
	"fmt"
	"strings"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/rollout"
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
	{indexKNN, "index", "VectorIndex · ensure index", "at creation only (static)"},
	{shards, "index", "VectorIndex · ensure index", "at creation only (static; a different live value is a Conflict, never a write)"},
	{"`spec.additionalSettings` keys", "index", "VectorIndex · ensure index", "at creation only"},
	{replicas, "index", "VectorIndex · converge settings", "whenever the live value differs from the spec (one PUT of the diff)"},
	{efSearch, "index", "VectorIndex · converge settings", "whenever the live value differs from the spec's fields (lucene fields search with it; faiss ignores it: a faiss field's ef_search is in its mapping, set at creation)"},
	{refresh, "index", "VectorIndex · converge settings", "whenever the live value differs from the spec" + heldByBench},
	{refresh, "index", "BenchmarkRun · run (Local load, or the Workflow's `vectorpilot bench prepare`)", "-1 while loading, then the value before; `status.restoreSettings` is recorded before the first change and put back however the run ends"},
	{indexspec.SettingConcurrentMode, "index", "VectorIndex · converge settings (value from the spec, or from the tune step's decision)", "whenever the live value differs" + heldByBench},
	{indexspec.SettingMaxSliceCount, "index", "VectorIndex · converge settings (value from the spec, or from the tune step's decision)", "whenever the live value differs" + heldByBench},
	{indexspec.SettingConcurrentMode, "index", "BenchmarkRun · run (each cell of the sweep)", sweepWhen},
	{indexspec.SettingMaxSliceCount, "index", "BenchmarkRun · run (each cell of the sweep)", sweepWhen},
	{indexspec.RestoreMarkerSetting, "index", "VectorIndex · ensure index (restore)", "set by the restore request as OpenSearch creates the index; removed once the index carries the object's `_meta`"},
	{rollout.AllocationSetting, "cluster (persistent)", "SearchCluster (managed) · roll out", "`primaries` before a serving node restarts; reset once every node is back (`status.allocationRestricted` until then)"},
	{rollout.AwarenessSetting, "cluster (persistent)", "SearchCluster (managed) · roll out", "the node attribute added to the user's own before a node restarts with search weights; the value before is recorded in `status.settingsBeforeRestart` and put back once every node is back"},
	{rollout.ForcedAwarenessSetting(managed.NodeAttribute), "cluster (persistent)", "SearchCluster (managed) · roll out", "every node's value, with the awareness attributes above; put back as they are"},
	{rollout.ExcludeSetting, "cluster (persistent)", "SearchCluster (managed) · drain nodes", "the nodes the operator drains (a shrinking or removed pool; a node holding the only copy of a shard before its restart) are added, and lifted once gone or back; names it did not add are left alone (`status.drainingNodes` records its own)"},
	{"every key of a pool's `opensearch.yml`", "node", "SearchCluster (managed) · apply objects (the pool's ConfigMap)", "on a spec change; static, so pods restart onto it one step at a time"},
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
