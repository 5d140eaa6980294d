// Package dashboards builds vectorpilot's Grafana dashboards with Grafana's foundation SDK.
// `vectorpilot dashboards --out dashboards/` writes them as JSON; the Helm chart ships them
// as ConfigMaps for the Grafana sidecar.
package dashboards

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// datasource is the dashboards' Prometheus, chosen by the $datasource variable.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// query is one PromQL target.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).Datasource(datasource)
}

// series is a time-series panel with one query per target.
func series(title, unit, description string, width uint32, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Unit(unit).Description(description).Datasource(datasource).Height(8).Span(width)
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// single is a stat panel.
func single(title, unit, description string, t *prometheus.DataqueryBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Unit(unit).Description(description).Datasource(datasource).Height(5).Span(6).WithTarget(t)
}

// variable is a label_values query variable over metric, filtered by the selector.
func variable(name, label, metric, selector string) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s%s, %s)", metric, selector, name)
	return dashboard.NewQueryVariableBuilder(name).Label(label).Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Multi(true).IncludeAll(true).AllValue(".*")
}

func base(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).Uid(uid).Description(description).
		Tags([]string{"vectorpilot", "opensearch", "k-nn"}).Refresh("30s").Time("now-3h", "now").Timezone("browser").
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus"))
}

const (
	sel      = `{namespace=~"$namespace", cluster=~"$cluster"}`
	selIndex = `{namespace=~"$namespace", cluster=~"$cluster", index=~"$index"}`
	rate     = "[$__rate_interval]"
)

// meanQueryLatency is the time in the query phase per shard-level query, by the labels in
// by. Undefined without queries (0/0 would draw NaN): shown only where queries ran, and the
// panel says why it is empty otherwise.
func meanQueryLatency(title string, width uint32, by, selector, legend string) *timeseries.PanelBuilder {
	queries := `sum by (` + by + `) (rate(vectorpilot_index_search_queries_total` + selector + rate + `))`
	return series(title, "s", "Time in the query phase per shard-level query.", width,
		query(`sum by (`+by+`) (rate(vectorpilot_index_search_query_seconds_total`+selector+rate+`)) / (`+queries+` > 0)`, legend)).
		NoValue("no queries")
}

func fleet() *dashboard.DashboardBuilder {
	return base("vectorpilot-fleet", "vectorpilot / Fleet overview", "Every SearchCluster and VectorIndex vectorpilot manages.").
		WithVariable(variable("namespace", "Namespace", "vectorpilot_cluster_reachable", "")).
		WithVariable(variable("cluster", "Cluster", "vectorpilot_cluster_reachable", `{namespace=~"$namespace"}`)).
		WithRow(dashboard.NewRowBuilder("Health")).
		WithPanel(single("Clusters reachable", "short", "SearchClusters whose last read succeeded.", query(`sum(vectorpilot_cluster_reachable`+sel+`)`, "reachable"))).
		WithPanel(single("Clusters red", "short", "Clusters with unassigned primary shards.", query(`sum(vectorpilot_cluster_health_status{namespace=~"$namespace", cluster=~"$cluster", status="red"})`, "red"))).
		WithPanel(single("Indexes ready", "short", "VectorIndexes whose Ready condition is True.", query(`sum(vectorpilot_index_ready`+sel+`)`, "ready"))).
		WithPanel(single("Indexes not ready", "short", "VectorIndexes that are not Ready; the reason label says why.", query(`count(vectorpilot_index_ready`+sel+` == 0) or vector(0)`, "not ready"))).
		WithRow(dashboard.NewRowBuilder("Traffic")).
		WithPanel(series("Search rate by index", "reqps", "Shard-level query phases per second.", 12,
			query(`sum by (namespace, index) (rate(vectorpilot_index_search_queries_total`+sel+rate+`))`, "{{namespace}}/{{index}}"))).
		WithPanel(meanQueryLatency("Mean query phase latency by index", 12, "namespace, index", sel, "{{namespace}}/{{index}}")).
		WithRow(dashboard.NewRowBuilder("Nodes")).
		WithPanel(series("Node CPU", "percent", "CPU of each OpenSearch process.", 8, query(`vectorpilot_node_cpu_percent`+sel, "{{cluster}}/{{node}}"))).
		WithPanel(series("JVM heap used", "percentunit", "Heap in use over heap maximum.", 8,
			query(`vectorpilot_node_heap_used_bytes`+sel+` / vectorpilot_node_heap_max_bytes`+sel, "{{cluster}}/{{node}}"))).
		WithPanel(series("k-NN graph memory", "bytes", "Native memory held by k-NN graphs.", 8, query(`vectorpilot_knn_graph_memory_bytes`+sel, "{{cluster}}/{{node}}"))).
		WithRow(dashboard.NewRowBuilder("Operator")).
		WithPanel(series("Reconcile errors", "ops", "Failed reconciles per second, by controller.", 12,
			query(`sum by (controller) (rate(controller_runtime_reconcile_errors_total{controller=~"vectorindex|searchcluster"}`+rate+`))`, "{{controller}}"))).
		WithPanel(series("Requests to OpenSearch", "reqps", "HTTP requests the operator sends each cluster (reconciles and metrics).", 12,
			query(`sum by (namespace, cluster) (rate(vectorpilot_opensearch_requests_total`+sel+rate+`))`, "{{namespace}}/{{cluster}}")))
}

func index() *dashboard.DashboardBuilder {
	return base("vectorpilot-index", "vectorpilot / Index", "One VectorIndex: traffic, latency, CPU against its headroom target, and the slice setting applied over time.").
		WithVariable(variable("namespace", "Namespace", "vectorpilot_index_ready", "")).
		WithVariable(variable("cluster", "Cluster", "vectorpilot_index_ready", `{namespace=~"$namespace"}`)).
		WithVariable(variable("index", "Index", "vectorpilot_index_ready", `{namespace=~"$namespace", cluster=~"$cluster"}`)).
		Annotation(dashboard.NewAnnotationQueryBuilder().Name("Tuner decisions").Datasource(datasource).Enable(true).IconColor("orange").
			Expr(`changes(vectorpilot_index_slice_count{namespace=~"$namespace", index=~"$index", source="autotune"}[2m]) > 0`).
			TitleFormat("slice setting changed").TextFormat("{{namespace}}/{{index}}").Step("1m")).
		WithRow(dashboard.NewRowBuilder("Traffic and latency")).
		WithPanel(series("Search rate", "reqps", "Shard-level query phases per second.", 8, query(`sum by (index) (rate(vectorpilot_index_search_queries_total`+selIndex+rate+`))`, "{{index}}"))).
		WithPanel(meanQueryLatency("Mean query phase latency", 8, "index", selIndex, "{{index}}")).
		// Undefined without lookups (0/0 would draw NaN): the ratio is shown only where the
		// cache was consulted, and the panel says why it is empty otherwise.
		WithPanel(series("Query cache hit ratio", "percentunit", "Hits over lookups of the index's query cache; k-NN queries alone do not consult it.", 8,
			query(`sum by (index) (rate(vectorpilot_index_query_cache_hits_total`+selIndex+rate+`)) / (sum by (index) (rate(vectorpilot_index_query_cache_hits_total`+selIndex+rate+`)) + sum by (index) (rate(vectorpilot_index_query_cache_misses_total`+selIndex+rate+`)) > 0)`, "{{index}}")).
			NoValue("no query-cache lookups")).
		WithRow(dashboard.NewRowBuilder("Slices and CPU")).
		WithPanel(series("Slice setting applied", "short", "1 = concurrent search off, 0 = Lucene's default slicing, N = N slices; source: spec or autotune.", 8,
			query(`vectorpilot_index_slice_count{namespace=~"$namespace", index=~"$index"}`, "{{index}} ({{source}})"))).
		WithPanel(series("Node CPU against the headroom target", "percent", "Busiest node's CPU; the dashed target is 100 minus the index's headroom.", 8,
			query(`max by (cluster) (vectorpilot_node_cpu_percent`+sel+`)`, "CPU {{cluster}}"),
			query(`100 - min by (cluster) (vectorpilot_index_tuning_headroom_percent`+selIndex+`)`, "target {{cluster}}"))).
		WithPanel(series("Tuner decisions", "short", "Decisions per hour that changed or kept the setting.", 8,
			query(`sum by (kind) (increase(vectorpilot_tuner_decisions_total{namespace=~"$namespace", index=~"$index"}[1h]))`, "{{kind}}"))).
		WithPanel(series("index_searcher pool", "short", "Threads busy and tasks queued on the concurrent search pool.", 12,
			query(`sum by (node) (vectorpilot_node_index_searcher_active`+sel+`)`, "active {{node}}"),
			query(`sum by (node) (vectorpilot_node_index_searcher_queue`+sel+`)`, "queued {{node}}"))).
		WithPanel(series("k-NN graph cache", "ops", "Graph cache hits and misses per second.", 12,
			query(`sum (rate(vectorpilot_knn_cache_hits_total`+sel+rate+`))`, "hits"),
			query(`sum (rate(vectorpilot_knn_cache_misses_total`+sel+rate+`))`, "misses"))).
		WithRow(dashboard.NewRowBuilder("Recall")).
		WithPanel(series("Live recall against target", "percentunit", "Recall@k the operator measures on sampled documents (spec.recall): approximate search against exact.", 12,
			query(`vectorpilot_index_recall`+selIndex, "{{index}} {{field}} @{{k}}"),
			query(`vectorpilot_index_recall_target`+selIndex, "target {{index}} {{field}}")).
			NoValue("no index sets spec.recall")).
		WithPanel(series("Recall measurement searches", "reqps", "Searches the recall measurements send (never counted as the tuner's live load).", 12,
			query(`sum by (index) (rate(vectorpilot_index_recall_searches_total`+selIndex+rate+`))`, "{{index}}")).
			NoValue("no index sets spec.recall")).
		WithRow(dashboard.NewRowBuilder("Size")).
		WithPanel(series("Documents", "short", "Documents in the index (primaries).", 8, query(`vectorpilot_index_docs`+selIndex, "{{index}}"))).
		WithPanel(series("Segments", "short", "Lucene segments (primaries): slices have segments to split only when there are several.", 8, query(`vectorpilot_index_segments`+selIndex, "{{index}}"))).
		WithPanel(series("Store size", "bytes", "On-disk size, replicas included.", 8, query(`vectorpilot_index_store_bytes`+selIndex, "{{index}}")))
}

func benchmark() *dashboard.DashboardBuilder {
	const b = `{namespace=~"$namespace", index=~"$index"}`
	return base("vectorpilot-benchmark", "vectorpilot / Benchmark results", "The benchmark table each Auto-tuned index is tuned from: p90 and node CPU per slice setting and client level; and what BenchmarkRuns compared: SIMD variants and vector representations.").
		WithVariable(variable("namespace", "Namespace", "vectorpilot_benchmark_p90_seconds", "")).
		WithVariable(variable("index", "Index", "vectorpilot_benchmark_p90_seconds", `{namespace=~"$namespace"}`)).
		WithPanel(series("p90 service time by slices and clients", "s", "Measured p90 per cell; slices 1 = off, 0 = Lucene's default.", 12,
			query(`vectorpilot_benchmark_p90_seconds`+b, "{{index}} slices={{slices}} clients={{clients}}"))).
		WithPanel(series("Node CPU by slices and clients", "percent", "Measured node CPU per cell.", 12,
			query(`vectorpilot_benchmark_cpu_percent`+b, "{{index}} slices={{slices}} clients={{clients}}"))).
		WithPanel(series("SIMD variants: throughput against the first variant", "short", "Per BenchmarkRun with variants: each variant's throughput over its first variant's (1.2 = 20 % more), with the SIMD level its pool asked for and Lucene's vector code.", 8,
			query(`vectorpilot_benchmark_variant_qps_ratio`+b, "{{run}} {{variant}} ({{simd}}, Lucene {{lucene_vector}}, faiss {{faiss_library}})"))).
		WithPanel(series("Representations: recall@k", "percentunit", "Per BenchmarkRun with representations: recall against the exact float neighbours, at one client.", 8,
			query(`vectorpilot_benchmark_representation_recall`+b, "{{run}} {{representation}}"))).
		WithPanel(series("Representations: hot bytes per document", "bytes", "Graph and scored vectors an HNSW search keeps in memory per document.", 8,
			query(`vectorpilot_benchmark_representation_hot_per_document_bytes`+b, "{{run}} {{representation}}")))
}

func snapshots() *dashboard.DashboardBuilder {
	const sp = `{namespace=~"$namespace", policy=~"$policy"}`
	return base("vectorpilot-snapshots", "vectorpilot / Snapshots", "SnapshotPolicies: age of the last successful snapshot against the schedule, durations, failures.").
		WithVariable(variable("namespace", "Namespace", "vectorpilot_snapshot_schedule_interval_seconds", "")).
		WithVariable(variable("policy", "Policy", "vectorpilot_snapshot_schedule_interval_seconds", `{namespace=~"$namespace"}`)).
		WithPanel(series("Age of the last successful snapshot", "s", "Seconds since the newest successful snapshot; alerting starts at twice the schedule interval.", 12,
			query(`time() - vectorpilot_snapshot_last_success_timestamp_seconds`+sp, "{{namespace}}/{{policy}}"),
			query(`2 * vectorpilot_snapshot_schedule_interval_seconds`+sp, "alert threshold {{policy}}"))).
		WithPanel(series("Snapshot duration", "s", "How long the newest successful snapshot took.", 12, query(`vectorpilot_snapshot_duration_seconds`+sp, "{{namespace}}/{{policy}}"))).
		WithPanel(series("Failed snapshots", "short", "Failed VectorSnapshots per hour.", 24, query(`increase(vectorpilot_snapshot_failures_total`+sp+`[1h])`, "{{namespace}}/{{policy}}")))
}

// All are the dashboards by file name.
func All() map[string]*dashboard.DashboardBuilder {
	return map[string]*dashboard.DashboardBuilder{
		"fleet.json":     fleet(),
		"index.json":     index(),
		"benchmark.json": benchmark(),
		"snapshots.json": snapshots(),
	}
}

// Render builds a dashboard and encodes it as indented JSON.
func Render(b *dashboard.DashboardBuilder) ([]byte, error) {
	d, err := b.Build()
	if err != nil {
		return nil, err
	}
	raw, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}
