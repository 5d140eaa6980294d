package managed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestCPUDetectPod: OpenSearch reads its opensearch.yml from what the cpu-features init
// container wrote — the pool's configuration plus the CPU level of the machine — and the
// init container's script, run here over a copy of its folders, writes exactly that.
func TestCPUDetectPod(t *testing.T) {
	sc := sample()
	pool := sc.Spec.Managed.NodePools[1]
	built, err := BuildPool(sc, pool, Live{})
	if err != nil {
		t.Fatal(err)
	}
	spec := built.StatefulSet.Spec.Template.Spec
	var script string
	for _, c := range spec.InitContainers {
		if c.Name == cpuInitName {
			script = c.Command[2]
		}
	}
	if script == "" {
		t.Fatalf("no %s init container in %v", cpuInitName, spec.InitContainers)
	}
	mounted := false
	for _, m := range spec.Containers[0].VolumeMounts {
		if strings.HasSuffix(m.MountPath, "/config/"+configFile) {
			mounted = m.Name == nodeConfigVolume && m.SubPath == configFile
		}
	}
	if !mounted {
		t.Errorf("opensearch.yml is not read from the %s volume: %+v", nodeConfigVolume, spec.Containers[0].VolumeMounts)
	}

	dir := t.TempDir()
	template, out := filepath.Join(dir, "template"), filepath.Join(dir, "out")
	for _, d := range []string{template, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(template, configFile), []byte(built.ConfigMap.Data[configFile]), 0o644); err != nil {
		t.Fatal(err)
	}
	cpuinfo := filepath.Join(dir, "cpuinfo")
	if err := os.WriteFile(cpuinfo, []byte("flags\t\t: fpu avx2 avx512f avx512cd avx512vl avx512dq avx512bw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script = strings.NewReplacer(configTemplateDir, template, nodeConfigDir, out).Replace(script)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "CPUINFO="+cpuinfo)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, log)
	}
	written, err := os.ReadFile(filepath.Join(out, configFile))
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := yaml.Unmarshal(written, &got); err != nil {
		t.Fatalf("the node's opensearch.yml does not parse: %v\n%s", err, written)
	}
	if err := yaml.Unmarshal([]byte(built.ConfigMap.Data[configFile]), &want); err != nil {
		t.Fatal(err)
	}
	want["node.attr."+CPUAttribute] = "avx512"
	if len(got) != len(want) || got["node.attr."+CPUAttribute] != "avx512" || got["cluster.name"] != want["cluster.name"] {
		t.Errorf("the node's opensearch.yml:\n%s\nwant the pool's plus node.attr.%s: avx512", written, CPUAttribute)
	}
}
