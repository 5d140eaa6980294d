package benchrun

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// Variants are the spec's variants as the engine measures them: a pool becomes the node
// specification of its attribute.
func Variants(spec []v1alpha1.BenchmarkVariant) []bench.Variant {
	var out []bench.Variant
	for _, v := range spec {
		nodes := v.Nodes
		if v.Pool != "" {
			nodes = managed.PoolAttribute + ":" + v.Pool
		}
		out = append(out, bench.Variant{Name: v.Name, Nodes: nodes})
	}
	return out
}

// VariantError is a variant that cannot be measured: no node matches it, or its nodes
// miss a started copy of a shard of the index and no copy is on its way to them.
type VariantError struct{ Message string }

func (e *VariantError) Error() string { return e.Message }

// CopiesTimeout bounds how long a variant waits for copies on their way to its nodes: a
// replica recovering after the load, a copy the balancer moves.
const CopiesTimeout = 15 * time.Minute

// copiesPoll is how often the wait reads the shard copies again.
const copiesPoll = 2 * time.Second

// ObserveVariant reads what a variant's nodes run (the level their pool asked for, their
// CPU's, the vector code their JVM options give Lucene, the faiss library their CPU and
// settings make the k-NN plugin load) and checks they hold a started copy of every shard
// of the index, so its queries are served by them alone; it waits while the copies they
// miss are on their way. The faiss library stays empty when a node does not say what its
// CPU has: the plugin's own CPU check decides then.
func ObserveVariant(ctx context.Context, c *opensearch.Client, index string, v bench.Variant) (v1alpha1.BenchmarkVariantResult, error) {
	nodes, err := c.NodeVariants(ctx, v.Nodes)
	if err != nil {
		return v1alpha1.BenchmarkVariantResult{Name: v.Name, Nodes: v.Nodes}, err
	}
	if len(nodes) == 0 {
		return v1alpha1.BenchmarkVariantResult{Name: v.Name, Nodes: v.Nodes}, &VariantError{fmt.Sprintf("variant %s: no node matches %q", v.Name, v.Nodes)}
	}
	out := describeVariant(v, nodes)
	return out, awaitCopies(ctx, c, index, v.Name, out.NodeNames, copiesPoll, CopiesTimeout)
}

// copyReader reads where an index's shard copies are, and why one cannot be placed.
type copyReader interface {
	Shards(ctx context.Context) ([]opensearch.ShardCopy, error)
	UnplaceableShard(ctx context.Context, index string, shard int, primary bool) (string, error)
}

// awaitCopies waits until the nodes hold a started copy of every shard of the index. It
// gives up at once when a shard they miss has no copy on its way (none initializing or
// relocating, and the unassigned ones unplaceable, as allocation explain says), and after
// timeout when the copies are still on their way.
func awaitCopies(ctx context.Context, c copyReader, index, variant string, nodes []string, poll, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		copies, err := c.Shards(ctx)
		if err != nil {
			return err
		}
		missing := missingCopies(copies, index, nodes)
		if len(missing) == 0 {
			return nil
		}
		var shards, unplaceable []string
		for _, m := range missing {
			shards = append(shards, m.Shard)
			if m.Moving || m.Unassigned == nil {
				continue
			}
			shard, err := strconv.Atoi(m.Shard)
			if err != nil {
				return fmt.Errorf("shard %q of index %s: %w", m.Shard, index, err)
			}
			why, err := c.UnplaceableShard(ctx, index, shard, m.Unassigned.PriRep == "p")
			if err != nil {
				return err
			}
			if why != "" {
				unplaceable = append(unplaceable, fmt.Sprintf("shard %s cannot be placed: %s", m.Shard, why))
			}
		}
		onTheWay := len(unplaceable) == 0 && !slices.ContainsFunc(missing, func(m missingCopy) bool { return !m.Moving && m.Unassigned == nil })
		if onTheWay && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
			}
			continue
		}
		msg := fmt.Sprintf("variant %s: nodes %s hold no started copy of shard %s of index %s", variant, strings.Join(nodes, ","), strings.Join(shards, ","), index)
		switch {
		case onTheWay:
			msg += fmt.Sprintf(", still on their way after %s", timeout)
		case len(unplaceable) > 0:
			msg += " (" + strings.Join(unplaceable, "; ") + ")"
		}
		return &VariantError{msg + "; give the index a copy on every variant's nodes " +
			"(number_of_replicas at least the variants less one, with allocation awareness on the pools' attribute)"}
	}
}

// missingCopy is a shard of which the variant's nodes hold no started copy.
type missingCopy struct {
	Shard string
	// Moving: a copy of the shard is initializing or relocating somewhere.
	Moving bool
	// Unassigned is a copy of the shard no node holds, a replica before a primary.
	Unassigned *opensearch.ShardCopy
}

// missingCopies are the index's shards with no started copy on the nodes, in shard order.
func missingCopies(copies []opensearch.ShardCopy, index string, nodes []string) []missingCopy {
	served, byShard := map[string]bool{}, map[string]*missingCopy{}
	for i, c := range copies {
		if c.Index != index {
			continue
		}
		m, ok := byShard[c.Shard]
		if !ok {
			m = &missingCopy{Shard: c.Shard}
			byShard[c.Shard] = m
		}
		switch c.State {
		case "STARTED":
			served[c.Shard] = served[c.Shard] || slices.Contains(nodes, c.Node)
		case "INITIALIZING", "RELOCATING":
			m.Moving = true
		case "UNASSIGNED":
			if m.Unassigned == nil || c.PriRep != "p" {
				m.Unassigned = &copies[i]
			}
		}
	}
	var out []missingCopy
	for s, m := range byShard {
		if !served[s] {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(a, b missingCopy) int { return cmpShard(a.Shard, b.Shard) })
	return out
}

// cmpShard orders shard numbers as numbers.
func cmpShard(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return x - y
}

// describeVariant is what a variant's nodes say they run.
func describeVariant(v bench.Variant, nodes []opensearch.NodeVariant) v1alpha1.BenchmarkVariantResult {
	out := v1alpha1.BenchmarkVariantResult{Name: v.Name, Nodes: v.Nodes}
	var asked, cpus, vectors, faiss []string
	for _, n := range nodes {
		out.NodeNames = append(out.NodeNames, n.Name)
		cpu := n.Attributes[managed.CPUAttribute]
		if cpu != "" {
			cpus = append(cpus, cpu)
			faiss = append(faiss, simd.FaissVariant(simd.Loaded(cpu, n.Disabled)))
		}
		if a := n.Attributes[managed.SIMDAttribute]; a != "" {
			asked = append(asked, a)
		}
		vectors = append(vectors, simd.LuceneVector(n.JVMArguments, cpu))
	}
	out.SIMD, out.CPUSIMD, out.LuceneVector = simd.Same(asked), simd.Common(cpus), simd.Same(vectors)
	if len(faiss) == len(nodes) {
		out.FaissLibrary = simd.Same(faiss)
	}
	return out
}

// minSIMDGain is the throughput a wider SIMD level must add over the level on the most
// instance families to be recommended: below it, the broader choice of hardware wins.
const minSIMDGain = 0.05

// CompareVariants sets each variant's ratios against the first one (the geometric mean
// over the slice × client cells both measured) and recommends the SIMD level: the best
// variant's, unless a variant whose level is on more instance families is within
// minSIMDGain of its throughput. It recommends nothing for fewer than two variants. The
// reason names the distance code the measured field's engine ran on each variant's nodes.
func CompareVariants(variants []v1alpha1.BenchmarkVariantResult, cells []bench.Cell, engine string) *v1alpha1.BenchmarkSIMDRecommendation {
	if len(variants) < 2 {
		return nil
	}
	type key struct {
		setting indexspec.Slices
		clients int
	}
	by := map[string]map[key]bench.Cell{}
	for _, c := range cells {
		if by[c.Variant] == nil {
			by[c.Variant] = map[key]bench.Cell{}
		}
		by[c.Variant][key{c.SliceCount, c.Clients}] = c
	}
	base := by[variants[0].Name]
	qps := make([]float64, len(variants))
	compared := 0
	for i := range variants {
		var logQPS, logP90 float64
		n := 0
		for k, b := range base {
			c, ok := by[variants[i].Name][k]
			if !ok || b.QPS == 0 || c.QPS == 0 || b.P90Ms == 0 || c.P90Ms == 0 {
				continue
			}
			logQPS += math.Log(c.QPS / b.QPS)
			logP90 += math.Log(c.P90Ms / b.P90Ms)
			n++
		}
		if n == 0 {
			continue
		}
		compared++
		qps[i] = math.Exp(logQPS / float64(n))
		variants[i].QPSRatio = strconv.FormatFloat(qps[i], 'f', 3, 64)
		variants[i].P90Ratio = strconv.FormatFloat(math.Exp(logP90/float64(n)), 'f', 3, 64)
	}
	best := 0
	for i := range variants {
		if qps[i] > qps[best] {
			best = i
		}
	}
	if compared < 2 {
		return &v1alpha1.BenchmarkSIMDRecommendation{Variant: variants[0].Name, Reason: "no cell was measured by every variant; nothing to compare"}
	}
	choice := best
	for i := range variants {
		if qps[i] >= qps[best]*(1-minSIMDGain) && families(variants[i]) > families(variants[choice]) {
			choice = i
		}
	}
	v := variants[choice]
	rec := &v1alpha1.BenchmarkSIMDRecommendation{Variant: v.Name, Level: level(v)}
	if c, ok := simd.For(v1alpha1.SIMDLevel(rec.Level)); ok {
		rec.InstanceFamilies = c.Families
	}
	switch {
	case rec.Level == "":
		rec.Reason = fmt.Sprintf("variant %s has the highest throughput (%.2f× variant %s); its nodes carry no SIMD attributes, so no level can be named", v.Name, qps[choice], variants[0].Name)
	case choice == best:
		rec.Reason = fmt.Sprintf("variant %s (%s) has the highest throughput: %.2f× variant %s; no variant on more instance families came within %.0f%% of it",
			v.Name, runs(v, engine), qps[choice], variants[0].Name, minSIMDGain*100)
	default:
		rec.Reason = fmt.Sprintf("variant %s (%s) is within %.0f%% of the fastest, variant %s (%s, %.2f× against %.2f× variant %s), and runs on more instance families",
			v.Name, runs(v, engine), minSIMDGain*100, variants[best].Name, runs(variants[best], engine), qps[best], qps[choice], variants[0].Name)
	}
	return rec
}

// runs is what a variant's nodes ran the engine's distances with: its level and the faiss
// library or Lucene's vector code.
func runs(v v1alpha1.BenchmarkVariantResult, engine string) string {
	code := ""
	switch engine {
	case "faiss":
		code = "faiss library " + orUnobserved(v.FaissLibrary)
	case "lucene":
		code = "Lucene " + orUnobserved(v.LuceneVector)
	default:
		return level(v)
	}
	return level(v) + ", " + code
}

func orUnobserved(s string) string {
	if s == "" {
		return "unobserved"
	}
	return s
}

// level is the SIMD level a variant's nodes run: the level their pool asked for, or their
// CPU's when it asked for auto.
func level(v v1alpha1.BenchmarkVariantResult) string {
	if _, ok := simd.For(v1alpha1.SIMDLevel(v.SIMD)); ok {
		return v.SIMD
	}
	if _, ok := simd.For(v1alpha1.SIMDLevel(v.CPUSIMD)); ok {
		return v.CPUSIMD
	}
	return ""
}

// families is how many instance families run a variant's level (0 when unknown).
func families(v v1alpha1.BenchmarkVariantResult) int {
	c, _ := simd.For(v1alpha1.SIMDLevel(level(v)))
	return len(c.Families)
}
