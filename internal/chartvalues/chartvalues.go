// Package chartvalues writes, from a SearchCluster's managed node pools, the values of the
// official OpenSearch Helm chart (opensearch-project/helm-charts, chart opensearch, one
// release per node group), so a team that runs OpenSearch from that chart gets the pools
// the managed mode would run: SIMD placement, JVM options, k-NN variant settings,
// storage, discovery. Every key is one the chart's values.yaml documents (ChartKeys).
package chartvalues

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// ChartVersion is the chart release the values are written for; its appVersion is the
// OpenSearch version vectorpilot tests against.
const ChartVersion = "3.6.0"

// bootstrapEnv is the setting a cluster-manager group bootstraps with. The chart sets
// cluster.initial_master_nodes only for groups with the deprecated "master" role
// (templates/statefulset.yaml, `has "master" .Values.roles`), so a cluster_manager group
// passes it itself.
const bootstrapEnv = "cluster.initial_cluster_manager_nodes"

// chartConfigVolume and chartConfigDir are where the chart's configfile init container
// copies config (templates/statefulset.yaml: the config-emptydir volume, mounted at
// /tmp/config/); extraInitContainers run after it.
const (
	chartConfigVolume = "config-emptydir"
	chartConfigDir    = "/tmp/config"
)

// NodeGroup is one node group's release: its name and its values.
type NodeGroup struct {
	Name   string
	Values map[string]any
}

// NodeGroups are the chart values of every pool of sc.spec.managed, in pool order.
func NodeGroups(sc *v1alpha1.SearchCluster) ([]NodeGroup, error) {
	m := sc.Spec.Managed
	if m == nil {
		return nil, fmt.Errorf("searchcluster %s has no spec.managed node pools", sc.Name)
	}
	manager := ""
	for _, p := range m.NodePools {
		if managed.IsClusterManager(p) {
			manager = managed.PoolName(sc, p.Name)
			break
		}
	}
	if manager == "" {
		return nil, fmt.Errorf("searchcluster %s has no cluster_manager pool", sc.Name)
	}
	var out []NodeGroup
	for _, p := range m.NodePools {
		roles := make([]string, 0, len(p.Roles))
		for _, r := range p.Roles {
			roles = append(roles, string(r))
		}
		v := map[string]any{
			"clusterName":   sc.Name,
			"nodeGroup":     p.Name,
			"masterService": manager,
			"roles":         roles,
			"replicas":      p.Replicas,
			"image":         map[string]any{"tag": m.Version},
			// Heap, the vector module and the SIMD level's vector width, then the pool's own.
			"opensearchJavaOpts": managed.JavaOptions(p),
			// A map, which the chart renders with toYaml (templates/configmap.yaml:12), so
			// a later values file (-f security.yaml) merges its settings in — a string
			// would replace the whole file.
			"config":     map[string]any{"opensearch.yml": managed.PoolSettings(sc, p)},
			"sysctlInit": map[string]any{"enabled": managed.MMap(sc) == v1alpha1.MMapInitContainer},
			// The node reads its CPU where it lands and reports it (node.attr.vectorpilot_cpu),
			// as managed pods do, so an external SearchCluster shows cpuSIMD too.
			"extraInitContainers": []map[string]any{{
				"name":         "cpu-features",
				"image":        managed.Image(sc),
				"command":      []string{"sh", "-c", "set -eu\n" + managed.CPUAttributeScript(chartConfigDir+"/opensearch.yml")},
				"volumeMounts": []map[string]any{{"name": chartConfigVolume, "mountPath": chartConfigDir}},
			}},
		}
		if a := simd.NodeAffinity(managed.SIMDOf(p), simd.Pins{InstanceTypes: p.InstanceTypes, InstanceFamilies: p.InstanceFamilies}); a != nil {
			v["nodeAffinity"] = a
		}
		if len(p.Resources.Requests) > 0 || len(p.Resources.Limits) > 0 {
			v["resources"] = p.Resources
		}
		if s := p.Storage; s != nil {
			persistence := map[string]any{"enabled": true, "size": s.Size.String()}
			if s.StorageClassName != nil {
				persistence["storageClass"] = *s.StorageClassName
			}
			v["persistence"] = persistence
		} else {
			v["persistence"] = map[string]any{"enabled": false}
		}
		if managed.IsClusterManager(p) {
			v["extraEnvs"] = []map[string]any{{"name": bootstrapEnv, "value": strings.Join(managed.InitialClusterManagerNodes(sc), ",")}}
		}
		if len(m.Keystore) > 0 {
			var ks []map[string]any
			for _, k := range m.Keystore {
				ks = append(ks, map[string]any{"secretName": k.SecretName})
			}
			v["keystore"] = ks
		}
		// Round-trip through JSON so the values are plain maps, lists and scalars, as a
		// values file is.
		raw, err := yaml.Marshal(v)
		if err != nil {
			return nil, err
		}
		var plain map[string]any
		if err := yaml.Unmarshal(raw, &plain); err != nil {
			return nil, err
		}
		out = append(out, NodeGroup{Name: p.Name, Values: plain})
	}
	return out, nil
}
