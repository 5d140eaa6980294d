package simd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

func nfd(arch string, features ...string) map[string]string {
	l := map[string]string{ArchLabel: arch}
	for _, f := range features {
		l[CPUIDLabelPrefix+f] = "true"
	}
	return l
}

var (
	sprNode    = nfd("amd64", "AVX2", "AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW", "AVX512FP16", "AVX512BF16", "AVX512VPOPCNTDQ")
	zen4Node   = nfd("amd64", "AVX2", "AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW", "AVX512BF16", "AVX512VPOPCNTDQ")
	avx2Node   = nfd("amd64", "AVX2")
	armNode    = map[string]string{ArchLabel: "arm64"}
	c7iNode    = map[string]string{ArchLabel: "amd64", InstanceFamilyLabel: "c7i", InstanceTypeLabel: "c7i.2xlarge"}
	m6aNode    = map[string]string{ArchLabel: "amd64", InstanceFamilyLabel: "m6a", InstanceTypeLabel: "m6a.xlarge"}
	c6iNode    = map[string]string{ArchLabel: "amd64", InstanceFamilyLabel: "c6i", InstanceTypeLabel: "c6i.large"}
	bareX86    = map[string]string{ArchLabel: "amd64"}
	sprNoAVX2  = nfd("amd64", "AVX512FP16") // partial labels: not SPR
	graviton3  = map[string]string{ArchLabel: "arm64", InstanceFamilyLabel: "c7g"}
	wrongArchF = map[string]string{ArchLabel: "arm64", InstanceFamilyLabel: "c7i"}
)

func TestObserve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"sapphire rapids by NFD", sprNode, "avx512_spr"},
		{"zen4 by NFD has no FP16", zen4Node, "avx512"},
		{"avx2 by NFD", avx2Node, "avx2"},
		{"arm64", armNode, "neon"},
		{"c7i by family", c7iNode, "avx512_spr"},
		{"m6a by family", m6aNode, "avx2"},
		{"c6i by family", c6iNode, "avx512"},
		{"no labels", bareX86, Unknown},
		{"partial NFD labels", sprNoAVX2, Unknown},
		{"arch wins over a family label", wrongArchF, "neon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Observe(tc.labels); got != tc.want {
				t.Errorf("Observe = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNodeAffinity checks the affinity with the scheduler's own matcher against nodes of
// every kind.
func TestNodeAffinity(t *testing.T) {
	nodes := map[string]map[string]string{"spr": sprNode, "zen4": zen4Node, "avx2": avx2Node, "arm": armNode, "c7i": c7iNode,
		"m6a": m6aNode, "c6i": c6iNode, "bare": bareX86, "partial": sprNoAVX2, "graviton3": graviton3}
	for _, tc := range []struct {
		level v1alpha1.SIMDLevel
		pins  Pins
		want  []string
	}{
		{v1alpha1.SIMDAVX512SPR, Pins{}, []string{"c7i", "spr"}},
		{v1alpha1.SIMDAVX512, Pins{}, []string{"c6i", "c7i", "spr", "zen4"}},
		{v1alpha1.SIMDAVX2, Pins{}, []string{"avx2", "c6i", "c7i", "m6a", "spr", "zen4"}},
		{v1alpha1.SIMDNEON, Pins{}, []string{"arm", "graviton3"}},
		{v1alpha1.SIMDAuto, Pins{}, []string{"arm", "avx2", "bare", "c6i", "c7i", "graviton3", "m6a", "partial", "spr", "zen4"}},
		{v1alpha1.SIMDAuto, Pins{InstanceFamilies: []string{"m6a"}}, []string{"m6a"}},
		{v1alpha1.SIMDAVX2, Pins{InstanceTypes: []string{"c6i.large", "m6a.xlarge"}}, []string{"c6i", "m6a"}},
		{v1alpha1.SIMDAVX512SPR, Pins{InstanceFamilies: []string{"c6i"}}, nil},
	} {
		t.Run(string(tc.level)+strings.Join(tc.pins.InstanceFamilies, ",")+strings.Join(tc.pins.InstanceTypes, ","), func(t *testing.T) {
			aff := NodeAffinity(tc.level, tc.pins)
			var sel *corev1.NodeSelector
			if aff != nil {
				sel = aff.RequiredDuringSchedulingIgnoredDuringExecution
			}
			var got []string
			for _, name := range []string{"arm", "avx2", "bare", "c6i", "c7i", "graviton3", "m6a", "partial", "spr", "zen4"} {
				node := &corev1.Node{}
				node.Labels = nodes[name]
				ok := true
				if sel != nil {
					m, err := nodeaffinity.NewNodeSelector(sel)
					if err != nil {
						t.Fatal(err)
					}
					ok = m.Match(node)
				}
				if ok {
					got = append(got, name)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("matches %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKNNSettingsAndJVM(t *testing.T) {
	for _, tc := range []struct {
		level    v1alpha1.SIMDLevel
		disabled string
		jvm      string
	}{
		{v1alpha1.SIMDAuto, "", LuceneVectorModule},
		{v1alpha1.SIMDAVX2, "knn.faiss.avx512.disabled,knn.faiss.avx512_spr.disabled", LuceneVectorModule + " -XX:UseAVX=2"},
		{v1alpha1.SIMDAVX512, "knn.faiss.avx512_spr.disabled", LuceneVectorModule + " -XX:UseAVX=3"},
		{v1alpha1.SIMDAVX512SPR, "", LuceneVectorModule + " -XX:UseAVX=3"},
		{v1alpha1.SIMDNEON, "", LuceneVectorModule},
	} {
		var disabled []string
		settings := KNNSettings(tc.level)
		for _, k := range []string{SettingAVX2Disabled, SettingAVX512Disabled, SettingAVX512SPRDisabled} {
			if settings[k] == "true" {
				disabled = append(disabled, k)
			} else if settings[k] != "false" {
				t.Errorf("%s: %s = %q, want explicit false", tc.level, k, settings[k])
			}
		}
		if got := strings.Join(disabled, ","); got != tc.disabled {
			t.Errorf("%s: disabled %q, want %q", tc.level, got, tc.disabled)
		}
		if got := strings.Join(JVMOptions(tc.level), " "); got != tc.jvm {
			t.Errorf("%s: JVM %q, want %q", tc.level, got, tc.jvm)
		}
	}
}

func TestCommon(t *testing.T) {
	for _, tc := range []struct {
		observed []string
		common   string
	}{
		{[]string{"avx512_spr", "avx512_spr"}, "avx512_spr"},
		{[]string{"avx512_spr", "avx512"}, "avx512"},
		{[]string{"avx512_spr", "avx2"}, "avx2"},
		{[]string{"neon", "neon"}, "neon"},
		{[]string{"neon", "avx2"}, Unknown},
		{[]string{"avx2", Unknown}, Unknown},
		{[]string{"generic", "avx2"}, Generic},
		{[]string{"avx2", "generic", Unknown}, Generic},
		{nil, ""},
	} {
		if got := Common(tc.observed); got != tc.common {
			t.Errorf("Common(%v) = %q, want %q", tc.observed, got, tc.common)
		}
	}
}

func TestLoaded(t *testing.T) {
	for _, tc := range []struct {
		cpu      string
		disabled []string
		loaded   string
	}{
		// The pool's own settings (KNNSettings) on a CPU that has the level or better.
		{"avx512_spr", settingsOn(v1alpha1.SIMDAVX2), "avx2"},
		{"avx512_spr", settingsOn(v1alpha1.SIMDAVX512), "avx512"},
		{"avx512_spr", settingsOn(v1alpha1.SIMDAVX512SPR), "avx512_spr"},
		{"avx512_spr", settingsOn(v1alpha1.SIMDAuto), "avx512_spr"},
		// The CPU caps what the settings allow.
		{"avx2", settingsOn(v1alpha1.SIMDAVX512SPR), "avx2"},
		{"avx512", nil, "avx512"},
		// Everything off, or only the middle one on.
		{"avx512_spr", []string{SettingAVX2Disabled, SettingAVX512Disabled, SettingAVX512SPRDisabled}, Generic},
		{"avx512_spr", []string{SettingAVX2Disabled, SettingAVX512SPRDisabled}, "avx512"},
		{"avx2", []string{SettingAVX2Disabled}, Generic},
		{"neon", []string{SettingAVX2Disabled}, "neon"},
		// An unknown CPU: what the settings leave on.
		{Unknown, settingsOn(v1alpha1.SIMDAVX512), "avx512"},
		{Unknown, nil, "avx512_spr"},
	} {
		if got := Loaded(tc.cpu, tc.disabled); got != tc.loaded {
			t.Errorf("Loaded(%s, %v) = %q, want %q", tc.cpu, tc.disabled, got, tc.loaded)
		}
	}
}

// settingsOn are the settings KNNSettings sets true for level.
func settingsOn(level v1alpha1.SIMDLevel) []string {
	var out []string
	for k, v := range KNNSettings(level) {
		if v == "true" {
			out = append(out, k)
		}
	}
	return out
}

// TestDocsHaveTheTable keeps the SIMD table of docs/managed-clusters.md the one this package generates.
func TestDocsHaveTheTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/managed-clusters.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), Describe()) {
		t.Errorf("docs/managed-clusters.md lacks the current SIMD table; replace it with:\n%s", Describe())
	}
}

// TestDetectScript runs the script a node checks its CPU with over /proc/cpuinfo files of
// each kind of CPU.
func TestDetectScript(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cpuinfo, want string
	}{
		{"sapphire rapids", "processor\t: 0\nflags\t\t: fpu sse avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 avx512_vpopcntdq avx512_fp16 amx_tile\n", "avx512_spr"},
		{"ice lake", "flags\t\t: fpu avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vpopcntdq\n", "avx512"},
		{"zen 3", "flags\t\t: fpu sse avx avx2 fma\n", "avx2"},
		{"graviton", "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n", "neon"},
		{"old x86", "flags\t\t: fpu sse sse2 avx\n", "unknown"},
		{"a flag that only starts like one", "flags\t\t: avx2x avx512fx\n", "unknown"},
		{"only the first CPU's line is read", "flags\t\t: avx2\nflags\t\t: avx2 avx512f avx512dq avx512cd avx512bw avx512vl\n", "avx2"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(path, []byte(tc.cpuinfo), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", DetectScript())
		cmd.Env = append(os.Environ(), "CPUINFO="+path)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
			t.Errorf("%s: %q (%v), want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestLuceneVector(t *testing.T) {
	for _, tc := range []struct {
		args []string
		cpu  string
		want string
	}{
		{JVMOptions(v1alpha1.SIMDAVX512), "avx512_spr", "panama-512"},
		{JVMOptions(v1alpha1.SIMDAVX2), "avx512_spr", "panama-256"},
		{JVMOptions(v1alpha1.SIMDAVX512), "avx2", "panama-256"}, // the CPU caps it
		{JVMOptions(v1alpha1.SIMDAuto), "avx512", "panama-512"},
		{JVMOptions(v1alpha1.SIMDNEON), "neon", "panama-128"},
		{[]string{"-Xmx1g", "-XX:UseAVX=2"}, "avx512", "scalar"},
		{[]string{"--add-modules", "jdk.incubator.vector", "-XX:MaxVectorSize=16"}, "avx512", "panama-128"},
		{[]string{LuceneVectorModule, "-XX:UseAVX=2", "-XX:UseAVX=3"}, "avx512", "panama-512"}, // the last counts
		{JVMOptions(v1alpha1.SIMDAVX512), Unknown, "panama"},
	} {
		if got := LuceneVector(tc.args, tc.cpu); got != tc.want {
			t.Errorf("%v on %s: %s, want %s", tc.args, tc.cpu, got, tc.want)
		}
	}
}

func TestSameSumsUpNodes(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   string
	}{
		{nil, ""},
		{[]string{"panama-512"}, "panama-512"},
		{[]string{"panama-512", "panama-512"}, "panama-512"},
		{[]string{"panama-512", "scalar", "panama-512"}, "mixed"},
	} {
		if got := Same(c.values); got != c.want {
			t.Errorf("Same(%v) = %q, want %q", c.values, got, c.want)
		}
	}
}

func TestFaissLibrary(t *testing.T) {
	const prefix = "[2026-11-26T23:52:07,199][INFO ][o.o.k.j.KNNLibraryLoader ] [nodes-0] "
	for _, tc := range []struct {
		name, log, variant, failed string
	}{
		{"not loaded yet", prefix + "Loaded library: opensearchknn_common\n" + prefix + "started\n", "", ""},
		{"avx512", prefix + "Loaded library: opensearchknn_common\n" + prefix + "Loaded library: opensearchknn_faiss_avx512\n", "avx512", ""},
		{"avx512_spr", prefix + "Loaded library: opensearchknn_faiss_avx512_spr\n", "avx512_spr", ""},
		{"generic", prefix + "Loaded library: opensearchknn_faiss\n", Generic, ""},
		{"the simd library is not faiss's", prefix + "Loaded library: opensearchknn_simd_avx512\n", "", ""},
		{"failed", strings.ReplaceAll(prefix, "INFO ", "ERROR") + "Failed to load library: opensearchknn_faiss_avx2\n", "", "opensearchknn_faiss_avx2"},
		{"JSON layout", `{"type": "server", "message": "Loaded library: opensearchknn_faiss_avx2", "node.name": "n"}` + "\n", "avx2", ""},
	} {
		variant, failed, err := FaissLibrary(strings.NewReader(tc.log))
		if err != nil || variant != tc.variant || failed != tc.failed {
			t.Errorf("%s: FaissLibrary = %q, %q, %v; want %q, %q", tc.name, variant, failed, err, tc.variant, tc.failed)
		}
	}
}
