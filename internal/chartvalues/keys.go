package chartvalues

// Key is a values key of the official chart: the kind its values.yaml gives it and where
// its templates read it (chart 3.6.0, opensearch-project/helm-charts tag opensearch-3.6.0).
type Key struct {
	// Kind is string, bool, int, list or map.
	Kind   string
	ReadAt string
}

// ChartKeys are the values keys NodeGroups writes, nested keys joined by dots ("*" is any
// key of a map). Checked against the chart's values.yaml and templates by reading them;
// the chart itself is not fetchable here (the Go module proxy refuses its non-semver tags).
var ChartKeys = map[string]Key{
	"clusterName":              {"string", "templates/statefulset.yaml:424 (cluster.name env), _helpers.tpl:56 (opensearch.uname)"},
	"nodeGroup":                {"string", "_helpers.tpl:56 (opensearch.uname: clusterName-nodeGroup, the StatefulSet and pod names)"},
	"masterService":            {"string", "templates/statefulset.yaml:422 (discovery.seed_hosts = masterService-headless)"},
	"roles":                    {"list", "_helpers.tpl:115 (node.roles env, templates/statefulset.yaml:430)"},
	"replicas":                 {"int", "templates/statefulset.yaml:21"},
	"image":                    {"map", "templates/statefulset.yaml:310"},
	"image.tag":                {"string", "templates/statefulset.yaml:310 (default .Chart.AppVersion)"},
	"opensearchJavaOpts":       {"string", "templates/statefulset.yaml:428 (OPENSEARCH_JAVA_OPTS env)"},
	"config":                   {"map", "templates/configmap.yaml:10, mounted by templates/statefulset.yaml:510"},
	"config.*":                 {"map", "templates/configmap.yaml:10-12 (one file per key; a map is rendered with toYaml)"},
	"nodeAffinity":             {"map", "templates/statefulset.yaml:154"},
	"sysctlInit":               {"map", "templates/statefulset.yaml:265"},
	"sysctlInit.enabled":       {"bool", "templates/statefulset.yaml:265 (privileged init container raising vm.max_map_count)"},
	"resources":                {"map", "templates/statefulset.yaml:411"},
	"persistence":              {"map", "templates/statefulset.yaml:26"},
	"persistence.enabled":      {"bool", "templates/statefulset.yaml:26 (volumeClaimTemplates)"},
	"persistence.size":         {"string", "templates/statefulset.yaml:50"},
	"persistence.storageClass": {"string", "templates/statefulset.yaml:51"},
	"extraEnvs":                {"list", "templates/statefulset.yaml:435"},
	"extraInitContainers":      {"list", "templates/statefulset.yaml:349 (after the configfile init container, statefulset.yaml:286)"},
	"keystore":                 {"list", "templates/statefulset.yaml:222 and 309 (keystore init container, one Secret per entry)"},
}
