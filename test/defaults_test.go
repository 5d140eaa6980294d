package test

import (
	"maps"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/vectorpilot/vectorpilot/config/crd"
)

// schemaDefaults are the API's schema defaults, each with why it does not change what an
// object created before it meant. The API server applies a default whenever it reads an
// object, so a default given to a field added to an existing kind also applies to every
// object stored before the field existed: it must equal what those objects did, or the
// field gets no schema default and the operator records the value per object instead
// (internal/managed's RecordDefaults: spec.managed.security.enabled,
// networkPolicy.enabled, mmap).
var schemaDefaults = map[string]string{
	// status: observedGeneration 0 says "not looked at yet" (kstatus, Argo CD health); an
	// object an operator wrote status for has its own value.
	"BenchmarkRun status":   "not a behaviour",
	"SearchCluster status":  "not a behaviour",
	"SnapshotPolicy status": "not a behaviour",
	"VectorIndex status":    "not a behaviour",
	"VectorSnapshot status": "not a behaviour",

	"VectorIndex spec.recall.interval":                          "read only when spec.recall is set, which came with them",
	"VectorIndex spec.recall.k":                                 "read only when spec.recall is set, which came with them",
	"VectorIndex spec.recall.queriesPerSecond":                  "read only when spec.recall is set, which came with them",
	"VectorIndex spec.recall.sampleSize":                        "read only when spec.recall is set, which came with them",
	"VectorIndex spec.rebuild.strategy":                         "Refuse is what every index did before spec.rebuild existed",
	"VectorIndex spec.rebuild.gate":                             "read only when spec.rebuild is set, which came with it",
	"VectorIndex spec.rebuild.gate.minRecall":                   "read only when spec.rebuild is set, which came with it",
	"VectorIndex spec.rebuild.gate.maxLatencyRegressionPercent": "read only when spec.rebuild is set, which came with it",
	"VectorIndex spec.rebuild.gate.k":                           "read only when spec.rebuild is set, which came with it",
	"VectorIndex spec.rebuild.gate.sampleSize":                  "read only when spec.rebuild is set, which came with it",
	"VectorIndex spec.rebuild.retainPrevious":                   "read only when spec.rebuild is set, which came with it",
	"VectorIndex spec.rebuild.onGateFailure":                    "read only when spec.rebuild is set, which came with it",

	"BenchmarkRun spec.clients":                            "since the kind exists",
	"BenchmarkRun spec.sliceCounts":                        "since the kind exists",
	"BenchmarkRun spec.runner.type":                        "since the kind exists",
	"BenchmarkRun spec.workload.dataset.generated.queries": "since the kind exists",
	"BenchmarkRun spec.workload.dataset.generated.seed":    "since the kind exists",
	"BenchmarkRun spec.workload.duration":                  "since the kind exists",
	"BenchmarkRun spec.workload.k":                         "since the kind exists",
	"BenchmarkRun spec.workload.load":                      "since the kind exists",
	"BenchmarkRun spec.workload.warmup":                    "since the kind exists",
	"BenchmarkRun spec.recallTarget":                       "read only for representations, which came with it",

	"SearchCluster spec.external.insecureSkipVerify":             "since the kind exists",
	"SearchCluster spec.managed.nodePools[].replicas":            "since spec.managed exists",
	"SearchCluster spec.managed.nodePools[].simd":                "since spec.managed exists",
	"SearchCluster spec.managed.updateStrategy.maxUnavailable":   "since spec.managed exists",
	"SearchCluster spec.managed.remoteStore.clusterState.client": "since spec.managed.remoteStore exists",
	"SearchCluster spec.managed.remoteStore.repository.client":   "since spec.managed.remoteStore exists",
	// {} only: the fields inside have no default (recorded per cluster instead).
	"SearchCluster spec.managed.security":      "an empty object: enabled is recorded per cluster",
	"SearchCluster spec.managed.networkPolicy": "an empty object: enabled is recorded per cluster",

	"SnapshotPolicy spec.repository.s3.client": "since the kind exists",
	"SnapshotPolicy spec.retention.maxCount":   "since the kind exists",

	"VectorIndex spec.deletionPolicy":                               "since the kind exists",
	"VectorIndex spec.fields[].compressionLevel":                    "since the kind exists",
	"VectorIndex spec.fields[].dataType":                            "since the kind exists",
	"VectorIndex spec.fields[].engine":                              "since the kind exists",
	"VectorIndex spec.fields[].method":                              "since the kind exists",
	"VectorIndex spec.fields[].method.name":                         "required before it had a default: no object lacks it",
	"VectorIndex spec.fields[].mode":                                "since the kind exists",
	"VectorIndex spec.fields[].spaceType":                           "since the kind exists",
	"VectorIndex spec.refreshInterval":                              "since the kind exists",
	"VectorIndex spec.replicas":                                     "since the kind exists",
	"VectorIndex spec.shards":                                       "since the kind exists",
	"VectorIndex spec.search":                                       "since the kind exists",
	"VectorIndex spec.search.concurrentSegmentSearch":               "since the kind exists",
	"VectorIndex spec.search.concurrentSegmentSearch.maxSliceCount": "since the kind exists",
	"VectorIndex spec.search.concurrentSegmentSearch.mode":          "since the kind exists",
	"VectorIndex spec.restoreFrom.storage":                          "Local: what every restore did before RemoteSnapshot existed",
	"VectorIndex spec.tuning.mode":                                  "since spec.tuning exists",
	"VectorIndex spec.tuning.benchmarkRef.configMap.key":            "since spec.tuning exists",
	"VectorIndex spec.tuning.cpuHeadroomPercent":                    "since spec.tuning exists",
	"VectorIndex spec.tuning.hysteresisPercent":                     "since spec.tuning exists",
	"VectorIndex spec.tuning.minGainPerCpuPercent":                  "since spec.tuning exists",
	// Added to an existing tuning policy: an Auto index tuned before gets the live-CPU
	// correction; what its owner chose (Auto or Off, its table, its headroom) is kept.
	"VectorIndex spec.tuning.cpuTolerancePercent": "tuner policy refinement; the owner's choices kept",
	"VectorIndex spec.tuning.cpuWindow":           "tuner policy refinement; the owner's choices kept",
	"VectorIndex spec.tuning.minDwell":            "tuner policy refinement; the owner's choices kept",

	// Before deletionPolicy existed, deleting a VectorSnapshot deleted its snapshot. Retain
	// keeps it: the one default that changed older objects, deliberately, toward keeping
	// data (nothing is deleted by surprise); Delete restores the old behaviour.
	"VectorSnapshot spec.deletionPolicy": "Retain keeps data older objects would have deleted",
}

// TestEveryDefaultKeepsWhatOlderObjectsMeant: every schema default is listed above with
// its reason, every listed one exists, and the fields the operator records per object
// have no schema default.
func TestEveryDefaultKeepsWhatOlderObjectsMeant(t *testing.T) {
	all, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, c := range all {
		for _, v := range c.Spec.Versions {
			if v.Schema != nil {
				walkDefaults(v.Schema.OpenAPIV3Schema, c.Spec.Names.Kind, "", found)
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(found)) {
		if _, ok := schemaDefaults[path]; !ok {
			t.Errorf("%s has a schema default nobody checked: the API server applies it to objects stored before the field existed too. "+
				"If it equals what those objects did, list it in schemaDefaults with why; otherwise drop the default and record it per object (internal/managed's RecordDefaults)", path)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(schemaDefaults)) {
		if !found[path] {
			t.Errorf("schemaDefaults lists %s, which has no schema default", path)
		}
	}
	for _, path := range []string{"SearchCluster spec.managed.security.enabled", "SearchCluster spec.managed.networkPolicy.enabled", "SearchCluster spec.managed.mmap"} {
		if found[path] {
			t.Errorf("%s has a schema default, but the operator records it per cluster (older clusters meant something else)", path)
		}
	}
}

// walkDefaults adds "Kind path" to found for each property with a default.
func walkDefaults(s *apiextensionsv1.JSONSchemaProps, kind, path string, found map[string]bool) {
	if s == nil {
		return
	}
	if s.Default != nil && path != "" {
		found[kind+" "+path] = true
	}
	for name, p := range s.Properties {
		sub := name
		if path != "" {
			sub = path + "." + name
		}
		walkDefaults(&p, kind, sub, found)
	}
	if s.Items != nil {
		walkDefaults(s.Items.Schema, kind, path+"[]", found)
	}
	if s.AdditionalProperties != nil {
		walkDefaults(s.AdditionalProperties.Schema, kind, path+"{}", found)
	}
}
