// Package simd is vectorpilot's one table of SIMD knowledge: which nodes have which vector
// instruction set (by node-feature-discovery CPU labels, instance family and architecture),
// how a node pool is pinned to them, which k-NN library variant a level loads, and the JVM
// options Lucene's vector code needs for it.
package simd

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// Node labels the table reads.
const (
	// ArchLabel is the well-known kubelet label with GOARCH.
	ArchLabel = "kubernetes.io/arch"
	// InstanceTypeLabel is the well-known cloud-provider label, e.g. c7i.2xlarge.
	InstanceTypeLabel = "node.kubernetes.io/instance-type"
	// InstanceFamilyLabel is Karpenter's AWS instance-family label, e.g. c7i. Karpenter
	// provisions by it and does not know NFD labels, so families are the pin that also
	// makes Karpenter launch the right machines.
	InstanceFamilyLabel = "karpenter.k8s.aws/instance-family"
	// CPUIDLabelPrefix prefixes node-feature-discovery's CPUID feature labels ("true").
	CPUIDLabelPrefix = "feature.node.kubernetes.io/cpu-cpuid."
)

// Unknown is the observed level of a node whose labels do not tell.
const Unknown = "unknown"

// k-NN plugin settings that switch a faiss library variant off; static, read at start.
const (
	SettingAVX2Disabled      = "knn.faiss.avx2.disabled"
	SettingAVX512Disabled    = "knn.faiss.avx512.disabled"
	SettingAVX512SPRDisabled = "knn.faiss.avx512_spr.disabled"
)

// LuceneVectorModule lets Lucene use the Panama vector API for its SIMD distance code on
// JDK 21 and later.
const LuceneVectorModule = "--add-modules=jdk.incubator.vector"

// Capability is what a SIMD level needs from a node and what it sets on the node.
type Capability struct {
	Level v1alpha1.SIMDLevel
	// rank orders the x86 levels: a node with rank r runs every level with rank <= r.
	rank int
	// Arch is the GOARCH the level exists on.
	Arch string
	// CPUID are the node-feature-discovery features the k-NN plugin checks for the level
	// (it reads the same flags from /proc/cpuinfo).
	CPUID []string
	// CPUInfo are the same features as /proc/cpuinfo names them (flags on x86, Features
	// on arm64), which a node checks itself at start (DetectScript).
	CPUInfo []string
	// Families are AWS instance families whose every size has the level.
	Families []string
	// Setting is the k-NN setting that switches this level's library off.
	Setting string
	// Disabled are the k-NN variant settings set to true so the plugin loads exactly this
	// level's library even on a node that has a better one.
	Disabled []string
	// JVM are JVM options for the level: HotSpot's vector width follows -XX:UseAVX, and
	// with it Lucene's preferred vector size.
	JVM []string
	// VectorBits is the widest vector register of a CPU of the level, the most HotSpot
	// gives Lucene's Panama code there.
	VectorBits int
}

// armFamilies are AWS Graviton families; all arm64 server CPUs have NEON.
var armFamilies = []string{"c6g", "c6gd", "c6gn", "m6g", "m6gd", "r6g", "r6gd", "t4g", "x2gd", "im4gn", "is4gen",
	"c7g", "c7gd", "c7gn", "m7g", "m7gd", "r7g", "r7gd", "c8g", "m8g", "r8g", "x8g"}

// sprFamilies: Intel Sapphire Rapids and newer (AVX512-FP16, BF16, VPOPCNTDQ).
var sprFamilies = []string{"c7i", "c7i-flex", "m7i", "m7i-flex", "r7i", "r7iz", "i7ie", "c8i", "m8i", "r8i"}

// avx512Families: Skylake-SP, Cascade Lake, Ice Lake and AMD Zen 4/5 (AVX512 F, CD, VL, DQ, BW).
var avx512Families = []string{"c5", "c5d", "c5n", "m5", "m5d", "m5dn", "m5n", "m5zn", "r5", "r5b", "r5d", "r5dn", "r5n", "z1d",
	"c6i", "c6id", "c6in", "m6i", "m6id", "m6idn", "m6in", "r6i", "r6id", "r6idn", "r6in", "i4i", "x2idn", "x2iedn",
	"c7a", "m7a", "r7a", "c8a", "m8a", "r8a"}

// avx2Families: AMD Zen 1-3 and older Intel families without AVX-512.
var avx2Families = []string{"c4", "m4", "r4", "t3", "t3a", "c5a", "c5ad", "m5a", "m5ad", "r5a", "r5ad", "c6a", "m6a", "r6a", "hpc6a"}

var table = []Capability{
	{Level: v1alpha1.SIMDAVX2, rank: 1, Arch: "amd64", CPUID: []string{"AVX2"}, CPUInfo: []string{"avx2"}, Setting: SettingAVX2Disabled,
		Families: concat(avx2Families, avx512Families, sprFamilies),
		Disabled: []string{SettingAVX512Disabled, SettingAVX512SPRDisabled},
		JVM:      []string{"-XX:UseAVX=2"}, VectorBits: 256},
	{Level: v1alpha1.SIMDAVX512, rank: 2, Arch: "amd64", CPUID: []string{"AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW"},
		CPUInfo: []string{"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}, Setting: SettingAVX512Disabled,
		Families: concat(avx512Families, sprFamilies),
		Disabled: []string{SettingAVX512SPRDisabled},
		JVM:      []string{"-XX:UseAVX=3"}, VectorBits: 512},
	{Level: v1alpha1.SIMDAVX512SPR, rank: 3, Arch: "amd64", CPUID: []string{"AVX512FP16", "AVX512BF16", "AVX512VPOPCNTDQ"},
		CPUInfo: []string{"avx512_fp16", "avx512_bf16", "avx512_vpopcntdq"}, Setting: SettingAVX512SPRDisabled,
		Families: sprFamilies,
		JVM:      []string{"-XX:UseAVX=3"}, VectorBits: 512},
	{Level: v1alpha1.SIMDNEON, Arch: "arm64", CPUInfo: []string{"asimd"}, Families: armFamilies, VectorBits: 128},
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// For is the capability of a level; ok is false for auto, which has no requirement.
func For(level v1alpha1.SIMDLevel) (Capability, bool) {
	for _, c := range table {
		if c.Level == level {
			return c, true
		}
	}
	return Capability{}, false
}

// Pins are a pool's own placement restrictions, added to every SIMD term.
type Pins struct {
	InstanceTypes    []string
	InstanceFamilies []string
}

func (p Pins) requirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	if len(p.InstanceTypes) > 0 {
		out = append(out, in(InstanceTypeLabel, p.InstanceTypes...))
	}
	if len(p.InstanceFamilies) > 0 {
		out = append(out, in(InstanceFamilyLabel, p.InstanceFamilies...))
	}
	return out
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// NodeAffinity is the required node affinity that places a pool on nodes with level. The
// terms are alternatives: a node qualifies by its NFD CPU labels or by its instance family
// (and, for NEON, by its architecture alone); the pool's pins restrict every term. Nil when
// neither the level nor the pins restrict anything.
func NodeAffinity(level v1alpha1.SIMDLevel, pins Pins) *corev1.NodeAffinity {
	extra := pins.requirements()
	var terms []corev1.NodeSelectorTerm
	c, ok := For(level)
	switch {
	case !ok:
		if len(extra) > 0 {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: extra})
		}
	case len(c.CPUID) == 0:
		terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: append([]corev1.NodeSelectorRequirement{in(ArchLabel, c.Arch)}, extra...)})
	default:
		byCPUID := []corev1.NodeSelectorRequirement{in(ArchLabel, c.Arch)}
		for _, f := range c.CPUID {
			byCPUID = append(byCPUID, in(CPUIDLabelPrefix+f, "true"))
		}
		byFamily := []corev1.NodeSelectorRequirement{in(ArchLabel, c.Arch), in(InstanceFamilyLabel, c.Families...)}
		terms = append(terms,
			corev1.NodeSelectorTerm{MatchExpressions: append(byCPUID, extra...)},
			corev1.NodeSelectorTerm{MatchExpressions: append(byFamily, extra...)})
	}
	if len(terms) == 0 {
		return nil
	}
	return &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
}

// KNNSettings are the opensearch.yml k-NN variant settings for level: every variant above
// the level is disabled, the rest explicitly enabled, so the node loads exactly the level's
// library. Auto and NEON leave the plugin's own choice.
func KNNSettings(level v1alpha1.SIMDLevel) map[string]string {
	out := map[string]string{SettingAVX2Disabled: "false", SettingAVX512Disabled: "false", SettingAVX512SPRDisabled: "false"}
	if c, ok := For(level); ok {
		for _, s := range c.Disabled {
			out[s] = "true"
		}
	}
	return out
}

// JVMOptions are the JVM options a pool of level needs: the vector module always, and the
// HotSpot vector width that matches the level.
func JVMOptions(level v1alpha1.SIMDLevel) []string {
	out := []string{LuceneVectorModule}
	if c, ok := For(level); ok {
		out = append(out, c.JVM...)
	}
	return out
}

// Observe is the best level a node's labels show: NFD CPUID labels first (they are read
// from the CPU), then the instance family, then the architecture for arm64; Unknown when
// none tells.
func Observe(labels map[string]string) string {
	if labels[ArchLabel] == "arm64" {
		return string(v1alpha1.SIMDNEON)
	}
	best := ""
	for _, c := range table {
		if c.Arch != "amd64" || !hasAll(labels, c.CPUID) {
			continue
		}
		best = string(c.Level)
	}
	if best != "" {
		return best
	}
	if fam := labels[InstanceFamilyLabel]; fam != "" {
		for _, c := range table {
			if slices.Contains(c.Families, fam) {
				best = string(c.Level)
			}
		}
		if best != "" {
			return best
		}
	}
	return Unknown
}

func hasAll(labels map[string]string, features []string) bool {
	for _, f := range features {
		if labels[CPUIDLabelPrefix+f] != "true" {
			return false
		}
	}
	return true
}

// Common is the best level every one of observed has: Generic when any is Generic, the
// lowest x86 level when all are x86, neon when all are arm64, Unknown when any is unknown
// or they mix architectures.
func Common(observed []string) string {
	if len(observed) == 0 {
		return ""
	}
	if slices.Contains(observed, Generic) {
		return Generic
	}
	lowest := observed[0]
	for _, o := range observed[1:] {
		a, aok := For(v1alpha1.SIMDLevel(lowest))
		b, bok := For(v1alpha1.SIMDLevel(o))
		switch {
		case !aok || !bok || a.Arch != b.Arch:
			return Unknown
		case b.rank < a.rank:
			lowest = o
		}
	}
	if _, ok := For(v1alpha1.SIMDLevel(lowest)); !ok {
		return Unknown
	}
	return lowest
}

// Same is the value every node reported, "mixed" when they differ, "" when none did: how
// a pool's (or a variant's) nodes are summed up where no common level applies, e.g. the
// vector code their JVM options give Lucene.
func Same(values []string) string {
	if len(values) == 0 {
		return ""
	}
	for _, v := range values[1:] {
		if v != values[0] {
			return "mixed"
		}
	}
	return values[0]
}

// Generic is the k-NN library variant without SIMD.
const Generic = "generic"

// Loaded is the k-NN library variant a node loads, chosen as the plugin chooses it at start:
// the best x86 variant the node's CPU has (cpu, a level Observe returns) whose setting is not
// disabled (the node's knn.faiss.<level>.disabled settings that are true), Generic when
// none is left; neon on arm64. When the CPU is unknown it is the best variant the settings
// leave on, the plugin's CPU check being invisible from outside.
func Loaded(cpu string, disabled []string) string {
	if cpu == string(v1alpha1.SIMDNEON) {
		return cpu
	}
	has, known := For(v1alpha1.SIMDLevel(cpu))
	best := Capability{}
	for _, c := range table {
		if c.Arch != "amd64" || slices.Contains(disabled, c.Setting) || (known && c.rank > has.rank) || c.rank < best.rank {
			continue
		}
		best = c
	}
	if best.Level == "" {
		return Generic
	}
	return string(best.Level)
}

// DetectScript is a POSIX shell script that prints the best level the CPU it runs on has,
// by this table, from the first flags (x86) or Features (arm64) line of /proc/cpuinfo (or
// the file $CPUINFO names); unknown when none matches. Like Observe, a level needs its own
// features; the x86 levels are checked in rank order.
func DetectScript() string {
	var b strings.Builder
	b.WriteString(`flags=" $(grep -m1 -E '^(flags|Features)[[:space:]]*:' "${CPUINFO:-/proc/cpuinfo}" | cut -d: -f2) "
has() { for f in "$@"; do case "$flags" in *" $f "*) ;; *) return 1 ;; esac; done; }
level=` + Unknown + "\n")
	for _, c := range table {
		fmt.Fprintf(&b, "if has %s; then level=%s; fi\n", strings.Join(c.CPUInfo, " "), c.Level)
	}
	b.WriteString(`echo "$level"` + "\n")
	return b.String()
}

// Rank orders levels by what they need from a CPU: a CPU of a higher rank on the same
// architecture runs every level of a lower one. ok is false for levels outside the table
// (auto, unknown, generic).
func Rank(level string) (arch string, rank int, ok bool) {
	c, ok := For(v1alpha1.SIMDLevel(level))
	return c.Arch, c.rank, ok
}

// Describe is the table of the levels in docs/managed-clusters.md, one Markdown row per level.
func Describe() string {
	var b strings.Builder
	b.WriteString("| simd | arch | NFD CPUID labels (all \"true\") | AWS instance families (those of higher x86 levels qualify too) | k-NN settings set true | JVM options |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| auto | any | — | — | — | `%s` |\n", LuceneVectorModule)
	for _, c := range table {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c.Level, c.Arch, code(c.CPUID), strings.Join(ownFamilies(c), ", "), code(c.Disabled), code(JVMOptions(c.Level)))
	}
	return b.String()
}

// ownFamilies are the families whose best level is c's.
func ownFamilies(c Capability) []string {
	var out []string
	for _, f := range c.Families {
		better := false
		for _, o := range table {
			better = better || (o.Arch == c.Arch && o.rank > c.rank && slices.Contains(o.Families, f))
		}
		if !better {
			out = append(out, f)
		}
	}
	return out
}

func code(items []string) string {
	if len(items) == 0 {
		return "—"
	}
	return "`" + strings.Join(items, "`, `") + "`"
}

// LuceneVector is the vector code Lucene runs with a node's JVM arguments on a CPU of level
// cpu: "scalar" without the vector module, else "panama-<bits>" at the width HotSpot gives
// vectors — -XX:MaxVectorSize (bytes) or -XX:UseAVX when set (the last one counts, as in
// the JVM), capped by the CPU — or "panama" when the CPU does not tell.
func LuceneVector(jvmArgs []string, cpu string) string {
	module := false
	bits := 0
	for i, a := range jvmArgs {
		switch {
		case a == LuceneVectorModule || (a == "--add-modules" && i+1 < len(jvmArgs) && strings.Contains(jvmArgs[i+1], "jdk.incubator.vector")) ||
			(strings.HasPrefix(a, "--add-modules=") && strings.Contains(a, "jdk.incubator.vector")):
			module = true
		case strings.HasPrefix(a, "-XX:UseAVX="):
			bits = map[string]int{"0": 128, "1": 128, "2": 256, "3": 512}[strings.TrimPrefix(a, "-XX:UseAVX=")]
		case strings.HasPrefix(a, "-XX:MaxVectorSize="):
			var n int
			if _, err := fmt.Sscan(strings.TrimPrefix(a, "-XX:MaxVectorSize="), &n); err == nil {
				bits = n * 8
			}
		}
	}
	if !module {
		return "scalar"
	}
	c, _ := For(v1alpha1.SIMDLevel(cpu))
	widest := c.VectorBits
	switch {
	case widest == 0:
		return "panama"
	case bits == 0 || bits > widest:
		bits = widest
	}
	return fmt.Sprintf("panama-%d", bits)
}

// faissLibraryPrefix is the name of the k-NN plugin's faiss JNI library; a variant adds
// _<level> (opensearchknn_faiss_avx512), the generic one nothing.
const faissLibraryPrefix = "opensearchknn_faiss"

// FaissLibrary is the faiss library variant a node's log says it loaded — the plugin's
// KNNLibraryLoader logs "Loaded library: opensearchknn_faiss[_<level>]" when the first
// faiss index is used, or "Failed to load library: …" —: the variant (Generic for the
// library without a level), and the name of a library that failed to load. Both are empty
// while the log has neither line.
func FaissLibrary(log io.Reader) (variant, failed string, err error) {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		for _, outcome := range []string{"Loaded library: ", "Failed to load library: "} {
			_, rest, found := strings.Cut(line, outcome)
			if !found || !strings.HasPrefix(rest, faissLibraryPrefix) {
				continue
			}
			name := strings.FieldsFunc(rest, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) })[0]
			if outcome != "Loaded library: " {
				failed = name
				continue
			}
			variant, failed = Generic, ""
			if level, ok := strings.CutPrefix(name, faissLibraryPrefix+"_"); ok {
				variant = level
			}
		}
	}
	return variant, failed, sc.Err()
}

// FaissVariant is the faiss library a node of level loads: the level itself on x86, the
// generic library on arm64 (k-NN builds no NEON variant of faiss).
func FaissVariant(level string) string {
	if level == string(v1alpha1.SIMDNEON) {
		return Generic
	}
	return level
}
