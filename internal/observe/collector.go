// Package observe reads OpenSearch figures for every SearchCluster on a bounded interval and
// serves them as Prometheus metrics. One read per cluster per interval covers all of its
// indexes and nodes (four requests), and a scrape only reads the last snapshot: the cost to
// OpenSearch does not grow with the number of indexes or of scrapes.
package observe

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/security"
)

// Collector is a manager Runnable (it polls) and a prometheus.Collector (it serves).
type Collector struct {
	Reader   client.Reader
	Resolver *connect.Resolver
	Interval time.Duration

	mu        sync.RWMutex
	snapshots map[clusterKey]snapshot
}

type clusterKey struct{ namespace, name string }

// snapshot is one cluster's last read, with the VectorIndex object behind each index.
type snapshot struct {
	reachable bool
	figures   opensearch.ClusterFigures
	// certificates are a secured managed cluster's, from its status and spec: they are
	// served whether OpenSearch answers or not.
	certificates *certificates
	// objects maps an OpenSearch index name to its VectorIndex's name.
	objects map[string]string
}

// certificates is when a cluster's earliest certificate ends and how long before its end
// the operator re-issues it.
type certificates struct {
	expiry       time.Time
	rotateBefore time.Duration
}

// certificatesOf reads a secured managed cluster's certificates from its status: the
// earliest end of those issued and of those its running nodes serve.
func certificatesOf(sc *v1alpha1.SearchCluster) *certificates {
	c := sc.Status.Certificates
	if sc.Spec.Managed == nil || c == nil || c.NotAfter.IsZero() {
		return nil
	}
	out := &certificates{expiry: c.NotAfter.Time, rotateBefore: security.LifetimesOf(sc).RotateBefore}
	if c.ServedNotAfter != nil && c.ServedNotAfter.Before(&c.NotAfter) {
		out.expiry = c.ServedNotAfter.Time
	}
	return out
}

var (
	labelsIndex   = []string{"namespace", "cluster", "index", "opensearch_index"}
	labelsNode    = []string{"namespace", "cluster", "node"}
	labelsCluster = []string{"namespace", "cluster"}

	descReachable   = prometheus.NewDesc("vectorpilot_cluster_reachable", "1 when the last read of the cluster succeeded.", labelsCluster, nil)
	descClusterUp   = prometheus.NewDesc("vectorpilot_cluster_health_status", "Cluster health: 1 for the current status (green, yellow, red).", append(labelsCluster, "status"), nil)
	descCertsEnd    = prometheus.NewDesc("vectorpilot_cluster_certificates_expiry_timestamp_seconds", "When the earliest certificate of a secured managed cluster ends, of those issued and those its running nodes serve (Unix time).", labelsCluster, nil)
	descCertsRotate = prometheus.NewDesc("vectorpilot_cluster_certificates_rotate_before_seconds", "How long before their end the operator re-issues a cluster's certificates (spec.managed.security.tls.rotateBefore).", labelsCluster, nil)
	descBreaker     = prometheus.NewDesc("vectorpilot_knn_circuit_breaker_tripped", "1 when the k-NN circuit breaker is tripped (graph memory full).", labelsCluster, nil)
	descIndexHealth = prometheus.NewDesc("vectorpilot_index_health_status", "Index health: 1 for the current status (green, yellow, red).", append(labelsIndex, "status"), nil)
	descDocs        = prometheus.NewDesc("vectorpilot_index_docs", "Documents in the index (primaries).", labelsIndex, nil)
	descSegments    = prometheus.NewDesc("vectorpilot_index_segments", "Lucene segments in the index (primaries).", labelsIndex, nil)
	descStore       = prometheus.NewDesc("vectorpilot_index_store_bytes", "On-disk size of the index, replicas included.", labelsIndex, nil)
	descQueries     = prometheus.NewDesc("vectorpilot_index_search_queries_total", "Shard-level search query phases served by the index.", labelsIndex, nil)
	descQueryTime   = prometheus.NewDesc("vectorpilot_index_search_query_seconds_total", "Time spent in shard-level search query phases.", labelsIndex, nil)
	descCacheHits   = prometheus.NewDesc("vectorpilot_index_query_cache_hits_total", "Query cache hits of the index.", labelsIndex, nil)
	descCacheMisses = prometheus.NewDesc("vectorpilot_index_query_cache_misses_total", "Query cache misses of the index.", labelsIndex, nil)
	descNodeCPU     = prometheus.NewDesc("vectorpilot_node_cpu_percent", "CPU use of the OpenSearch process, percent of the node.", labelsNode, nil)
	descHeapUsed    = prometheus.NewDesc("vectorpilot_node_heap_used_bytes", "JVM heap in use.", labelsNode, nil)
	descHeapMax     = prometheus.NewDesc("vectorpilot_node_heap_max_bytes", "JVM heap maximum.", labelsNode, nil)
	descSearcherAct = prometheus.NewDesc("vectorpilot_node_index_searcher_active", "Active threads of the index_searcher pool (concurrent segment search).", labelsNode, nil)
	descSearcherQ   = prometheus.NewDesc("vectorpilot_node_index_searcher_queue", "Tasks queued on the index_searcher pool.", labelsNode, nil)
	descGraphMem    = prometheus.NewDesc("vectorpilot_knn_graph_memory_bytes", "Native memory held by k-NN graphs on the node.", labelsNode, nil)
	descKNNHits     = prometheus.NewDesc("vectorpilot_knn_cache_hits_total", "k-NN graph cache hits on the node.", labelsNode, nil)
	descKNNMisses   = prometheus.NewDesc("vectorpilot_knn_cache_misses_total", "k-NN graph cache misses on the node.", labelsNode, nil)
)

// Start polls until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	if c.Interval == 0 {
		c.Interval = 30 * time.Second
	}
	c.activate()
	defer c.deactivate()
	ticker := time.NewTicker(c.Interval)
	defer ticker.Stop()
	for {
		c.Poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// NeedLeaderElection is true: every replica serves metrics, but only the leader polls
// OpenSearch.
func (c *Collector) NeedLeaderElection() bool { return true }

// Poll reads every cluster once and replaces the served snapshot.
func (c *Collector) Poll(ctx context.Context) {
	log := logf.FromContext(ctx).WithName("observe")
	var clusters v1alpha1.SearchClusterList
	var indexes v1alpha1.VectorIndexList
	if err := c.Reader.List(ctx, &clusters); err != nil {
		log.Error(err, "listing SearchClusters")
		return
	}
	if err := c.Reader.List(ctx, &indexes); err != nil {
		log.Error(err, "listing VectorIndexes")
		return
	}
	next := map[clusterKey]snapshot{}
	for i := range clusters.Items {
		sc := &clusters.Items[i]
		key := clusterKey{sc.Namespace, sc.Name}
		snap := snapshot{objects: map[string]string{}, certificates: certificatesOf(sc)}
		var names []string
		for _, vi := range indexes.Items {
			if vi.Namespace == sc.Namespace && vi.Spec.ClusterRef.Name == sc.Name {
				snap.objects[vi.OpenSearchIndexName()] = vi.Name
				names = append(names, vi.OpenSearchIndexName())
			}
		}
		// A cluster the SearchCluster controller already finds unreachable is not asked
		// again here; it is reported as such.
		if conditions.IsReady(sc.Status.Conditions) || sc.Status.Health != "" {
			if osClient, err := c.Resolver.ClientFor(ctx, sc); err == nil {
				if figs, err := osClient.Figures(ctx, names); err == nil {
					snap.reachable, snap.figures = true, figs
				} else {
					log.V(1).Info("reading cluster figures", "cluster", key, "error", err.Error())
				}
			}
		}
		next[key] = snap
	}
	c.mu.Lock()
	c.snapshots = next
	c.mu.Unlock()
}

// Describe sends nothing: the metric set depends on the clusters found (an unchecked
// collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect serves the last snapshots.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for key, snap := range c.snapshots {
		gauge(descReachable, boolValue(snap.reachable), key.namespace, key.name)
		if c := snap.certificates; c != nil {
			gauge(descCertsEnd, float64(c.expiry.Unix()), key.namespace, key.name)
			gauge(descCertsRotate, c.rotateBefore.Seconds(), key.namespace, key.name)
		}
		if !snap.reachable {
			continue
		}
		f := snap.figures
		for _, status := range []string{"green", "yellow", "red"} {
			gauge(descClusterUp, boolValue(f.Health == status), key.namespace, key.name, status)
		}
		gauge(descBreaker, boolValue(f.KNNCircuitBreakerTripped), key.namespace, key.name)
		for osName, fig := range f.Indexes {
			object, ok := snap.objects[osName]
			if !ok {
				continue
			}
			l := []string{key.namespace, key.name, object, osName}
			for _, status := range []string{"green", "yellow", "red"} {
				gauge(descIndexHealth, boolValue(fig.Health == status), append(l, status)...)
			}
			gauge(descDocs, float64(fig.Docs), l...)
			gauge(descSegments, float64(fig.Segments), l...)
			gauge(descStore, float64(fig.StoreBytes), l...)
			counter(descQueries, float64(fig.QueryTotal), l...)
			counter(descQueryTime, float64(fig.QueryTimeMillis)/1000, l...)
			counter(descCacheHits, float64(fig.QueryCacheHits), l...)
			counter(descCacheMisses, float64(fig.QueryCacheMisses), l...)
		}
		for node, n := range f.Nodes {
			l := []string{key.namespace, key.name, node}
			gauge(descNodeCPU, n.CPUPercent, l...)
			gauge(descHeapUsed, float64(n.HeapUsedBytes), l...)
			gauge(descHeapMax, float64(n.HeapMaxBytes), l...)
			gauge(descSearcherAct, float64(n.SearcherActive), l...)
			gauge(descSearcherQ, float64(n.SearcherQueue), l...)
			gauge(descGraphMem, float64(n.KNNGraphMemoryByte), l...)
			counter(descKNNHits, float64(n.KNNCacheHits), l...)
			counter(descKNNMisses, float64(n.KNNCacheMisses), l...)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// active is the Collector of the running manager; the registry holds one proxy to it, so a
// process that runs managers one after another (tests, `vectorpilot-dev` restarts) never
// serves a stopped manager's figures twice.
var (
	activeMu sync.RWMutex
	active   *Collector
)

type proxy struct{}

func (proxy) Describe(chan<- *prometheus.Desc) {}

func (proxy) Collect(ch chan<- prometheus.Metric) {
	activeMu.RLock()
	c := active
	activeMu.RUnlock()
	if c != nil {
		c.Collect(ch)
	}
}

func init() { ctrlmetrics.Registry.MustRegister(proxy{}) }

func (c *Collector) activate() {
	activeMu.Lock()
	active = c
	activeMu.Unlock()
}

func (c *Collector) deactivate() {
	activeMu.Lock()
	if active == c {
		active = nil
	}
	activeMu.Unlock()
}
