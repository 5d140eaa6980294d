package chartvalues

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

func shippedSample(t *testing.T) *v1alpha1.SearchCluster {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testsupport.Root(t), "config", "samples", "vectorpilot_v1alpha1_searchcluster_managed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc := &v1alpha1.SearchCluster{}
	if err := yaml.UnmarshalStrict(raw, sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

// kindOf is a values value's kind as ChartKeys names them.
func kindOf(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case float64:
		if x == float64(int64(x)) {
			return "int"
		}
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}

// checkKeys wants every key the chart documents, of its kind; it descends into a map only
// where the chart documents what is inside (not into Kubernetes types such as resources).
func checkKeys(t *testing.T, group, prefix string, values map[string]any) {
	t.Helper()
	for k, v := range values {
		path := prefix + k
		key, ok := ChartKeys[path]
		if !ok {
			key, ok = ChartKeys[prefix+"*"]
		}
		if !ok {
			t.Errorf("%s: %s is no key of the chart's values", group, path)
			continue
		}
		if got := kindOf(v); got != key.Kind {
			t.Errorf("%s: %s is a %s, the chart takes a %s", group, path, got, key.Kind)
		}
		if m, isMap := v.(map[string]any); isMap {
			documented := false
			for ck := range ChartKeys {
				documented = documented || strings.HasPrefix(ck, path+".")
			}
			if documented {
				checkKeys(t, group, path+".", m)
			}
		}
	}
}

// TestNodeGroupsOfTheShippedSample: the two pools of the shipped managed sample become two
// node groups whose every key is one the chart documents, with each pool's SIMD placement,
// JVM options and k-NN settings where the chart reads them, and the discovery the chart
// expects.
func TestNodeGroupsOfTheShippedSample(t *testing.T) {
	sc := shippedSample(t)
	groups, err := NodeGroups(sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("%d node groups, want one per pool", len(groups))
	}
	for i, g := range groups {
		pool := sc.Spec.Managed.NodePools[i]
		checkKeys(t, g.Name, "", g.Values)
		v := g.Values
		if v["clusterName"] != sc.Name || v["nodeGroup"] != pool.Name || v["masterService"] != "vectors-managed-managers" {
			t.Errorf("%s: clusterName %v nodeGroup %v masterService %v", g.Name, v["clusterName"], v["nodeGroup"], v["masterService"])
		}
		// The chart names pods clusterName-nodeGroup-N, as the operator does.
		if uname := fmt.Sprintf("%s-%s", v["clusterName"], v["nodeGroup"]); uname != managed.PoolName(sc, pool.Name) {
			t.Errorf("%s: the chart names the pods %s, the operator %s", g.Name, uname, managed.PoolName(sc, pool.Name))
		}
		var want any
		if a := simd.NodeAffinity(managed.SIMDOf(pool), simd.Pins{InstanceFamilies: pool.InstanceFamilies}); a != nil {
			affinity, _ := json.Marshal(a)
			_ = json.Unmarshal(affinity, &want)
		}
		if !reflect.DeepEqual(v["nodeAffinity"], want) {
			t.Errorf("%s: nodeAffinity %v, want the operator's %v", g.Name, v["nodeAffinity"], want)
		}
		opts, _ := v["opensearchJavaOpts"].(string)
		for _, o := range simd.JVMOptions(managed.SIMDOf(pool)) {
			if !strings.Contains(opts, o) {
				t.Errorf("%s: opensearchJavaOpts %q lacks %s", g.Name, opts, o)
			}
		}
		config, _ := v["config"].(map[string]any)["opensearch.yml"].(map[string]any)
		for k, want := range simd.KNNSettings(managed.SIMDOf(pool)) {
			if config[k] != want {
				t.Errorf("%s: opensearch.yml %s=%v, want %s", g.Name, k, config[k], want)
			}
		}
		if config["node.attr."+managed.PoolAttribute] != pool.Name || config["search.concurrent_segment_search.mode"] != "auto" {
			t.Errorf("%s: opensearch.yml %v", g.Name, config)
		}
		envs, hasEnvs := v["extraEnvs"].([]any)
		if managed.IsClusterManager(pool) {
			want := []any{map[string]any{"name": bootstrapEnv, "value": "vectors-managed-managers-0,vectors-managed-managers-1,vectors-managed-managers-2"}}
			if !reflect.DeepEqual(envs, want) {
				t.Errorf("%s: extraEnvs %v, want the bootstrap list (the chart sets it only for the \"master\" role)", g.Name, envs)
			}
		} else if hasEnvs {
			t.Errorf("%s: a data group bootstraps: %v", g.Name, envs)
		}
		if p := v["persistence"].(map[string]any); p["enabled"] != true || p["size"] != pool.Storage.Size.String() {
			t.Errorf("%s: persistence %v", g.Name, p)
		}
	}
	if sc.Spec.Managed.NodePools[1].Resources.Requests.Cpu().String() != "4" {
		t.Fatal("the sample changed: this test reads its data pool")
	}
}

// TestChartCPUScript runs the cpu-features init container's script as the chart would
// run it: over the opensearch.yml its configfile init container left in config-emptydir.
func TestChartCPUScript(t *testing.T) {
	groups, err := NodeGroups(shippedSample(t))
	if err != nil {
		t.Fatal(err)
	}
	init := groups[1].Values["extraInitContainers"].([]any)[0].(map[string]any)
	script := init["command"].([]any)[2].(string)
	dir := t.TempDir()
	// What the chart's ConfigMap holds: the map rendered as YAML.
	yml, err := yaml.Marshal(groups[1].Values["config"].(map[string]any)["opensearch.yml"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opensearch.yml"), yml, 0o644); err != nil {
		t.Fatal(err)
	}
	cpuinfo := filepath.Join(dir, "cpuinfo")
	if err := os.WriteFile(cpuinfo, []byte("flags\t: avx2 avx512f avx512cd avx512vl avx512dq avx512bw avx512_fp16 avx512_bf16 avx512_vpopcntdq\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(script, chartConfigDir, dir))
	cmd.Env = append(os.Environ(), "CPUINFO="+cpuinfo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "opensearch.yml"))
	var got map[string]any
	if err := yaml.Unmarshal(raw, &got); err != nil || got["node.attr."+managed.CPUAttribute] != "avx512_spr" || got["node.attr.vectorpilot_simd"] != "avx512_spr" {
		t.Errorf("opensearch.yml after the script (%v):\n%s", err, raw)
	}
}

func TestNodeGroupsRefuse(t *testing.T) {
	if _, err := NodeGroups(&v1alpha1.SearchCluster{}); err == nil {
		t.Error("an external SearchCluster gave node groups")
	}
	sc := shippedSample(t)
	sc.Spec.Managed.NodePools = sc.Spec.Managed.NodePools[1:]
	if _, err := NodeGroups(sc); err == nil {
		t.Error("node groups without a cluster manager: nobody to discover")
	}
}
