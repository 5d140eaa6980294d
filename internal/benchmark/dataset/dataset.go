// Package dataset makes vector datasets for tests and benchmarks: a seeded generator of
// clustered vectors (so HNSW graphs face realistic neighbourhoods, not uniform noise) and
// exact nearest neighbours by brute force, the ground truth recall is measured against.
package dataset

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Vectors is a set of equal-length float32 vectors stored in one flat slice, row by row,
// so distance loops stream through memory.
type Vectors struct {
	Dim  int
	Data []float32
}

// Len is the number of vectors.
func (v Vectors) Len() int { return len(v.Data) / v.Dim }

// At is the i-th vector (a view, not a copy).
func (v Vectors) At(i int) []float32 { return v.Data[i*v.Dim : (i+1)*v.Dim] }

// Spec describes a generated dataset.
type Spec struct {
	Count, Queries, Dim int
	// Clusters is the number of Gaussian clusters the points are drawn around.
	Clusters int
	// Spread is the standard deviation of a point around its cluster centre.
	Spread float64
	Seed   uint64
}

// Generate draws Count base vectors and Queries query vectors from the same clustered
// distribution. The same Spec always gives the same vectors.
func Generate(s Spec) (base, queries Vectors) {
	if s.Clusters <= 0 {
		s.Clusters = 16
	}
	if s.Spread == 0 {
		s.Spread = 0.15
	}
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	centres := make([]float32, s.Clusters*s.Dim)
	for i := range centres {
		centres[i] = float32(rng.Float64()*2 - 1)
	}
	draw := func(n int) Vectors {
		v := Vectors{Dim: s.Dim, Data: make([]float32, n*s.Dim)}
		for i := 0; i < n; i++ {
			c := rng.IntN(s.Clusters)
			row := v.At(i)
			for d := range row {
				row[d] = centres[c*s.Dim+d] + float32(rng.NormFloat64()*s.Spread)
			}
		}
		return v
	}
	return draw(s.Count), draw(s.Queries)
}

// Neighbor is a base vector's index and its distance to a query.
type Neighbor struct {
	ID       int
	Distance float32
}

// SquaredL2 is the squared Euclidean distance; the loop is unrolled by four so the
// compiler keeps four independent accumulators in flight.
func SquaredL2(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < n; i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return s0 + s1 + s2 + s3
}

// ExactKNN computes, for every query, the k nearest base vectors by squared L2 distance,
// nearest first, with queries spread over all cores.
func ExactKNN(base, queries Vectors, k int) [][]Neighbor {
	out := make([][]Neighbor, queries.Len())
	workers := runtime.GOMAXPROCS(0)
	next := make(chan int, queries.Len())
	for q := 0; q < queries.Len(); q++ {
		next <- q
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := range next {
				out[q] = nearest(base, queries.At(q), k)
			}
		}()
	}
	wg.Wait()
	return out
}

// nearest keeps the k best in a max-heap, so each base vector costs one comparison with
// the current worst unless it displaces it.
func nearest(base Vectors, q []float32, k int) []Neighbor {
	h := make(maxHeap, 0, k)
	worst := float32(math.Inf(1))
	for i := 0; i < base.Len(); i++ {
		d := SquaredL2(q, base.At(i))
		if len(h) < k {
			heap.Push(&h, Neighbor{ID: i, Distance: d})
			if len(h) == k {
				worst = h[0].Distance
			}
		} else if d < worst {
			h[0] = Neighbor{ID: i, Distance: d}
			heap.Fix(&h, 0)
			worst = h[0].Distance
		}
	}
	res := make([]Neighbor, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		res[i] = heap.Pop(&h).(Neighbor)
	}
	return res
}

type maxHeap []Neighbor

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i].Distance > h[j].Distance }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(Neighbor)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Recall is the fraction of the exact neighbours' ids found among the returned ids,
// averaged over queries.
func Recall(exact [][]Neighbor, got [][]int) float64 {
	if len(exact) == 0 {
		return 0
	}
	var sum float64
	for q := range exact {
		want := make(map[int]bool, len(exact[q]))
		for _, n := range exact[q] {
			want[n.ID] = true
		}
		hit := 0
		for _, id := range got[q] {
			if want[id] {
				hit++
			}
		}
		sum += float64(hit) / float64(len(exact[q]))
	}
	return sum / float64(len(exact))
}
