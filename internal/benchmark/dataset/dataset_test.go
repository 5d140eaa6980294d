package dataset

import (
	"sort"
	"testing"
)

func TestGenerateIsDeterministicPerSeed(t *testing.T) {
	s := Spec{Count: 100, Queries: 10, Dim: 8, Seed: 42}
	a, qa := Generate(s)
	b, qb := Generate(s)
	if a.Len() != 100 || qa.Len() != 10 || a.Dim != 8 {
		t.Fatalf("sizes: base %d queries %d dim %d", a.Len(), qa.Len(), a.Dim)
	}
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			t.Fatalf("same seed gave different base vectors at %d", i)
		}
	}
	for i := range qa.Data {
		if qa.Data[i] != qb.Data[i] {
			t.Fatalf("same seed gave different queries at %d", i)
		}
	}
	s.Seed = 43
	c, _ := Generate(s)
	if c.Data[0] == a.Data[0] && c.Data[1] == a.Data[1] {
		t.Fatal("different seeds gave the same vectors")
	}
}

func TestSquaredL2(t *testing.T) {
	cases := []struct {
		a, b []float32
		want float32
	}{
		{[]float32{0}, []float32{3}, 9},
		{[]float32{1, 2, 3, 4, 5}, []float32{1, 2, 3, 4, 5}, 0},
		{[]float32{1, 1, 1, 1, 1, 1}, []float32{0, 0, 0, 0, 0, 0}, 6},
		{[]float32{3, 0, 0, 0, 0, 4, 0}, []float32{0, 0, 0, 0, 0, 0, 0}, 25},
	}
	for _, c := range cases {
		if got := SquaredL2(c.a, c.b); got != c.want {
			t.Errorf("SquaredL2(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// naiveKNN sorts all distances: slow, obviously right, the reference for ExactKNN.
func naiveKNN(base Vectors, q []float32, k int) []int {
	ids := make([]int, base.Len())
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return SquaredL2(q, base.At(ids[a])) < SquaredL2(q, base.At(ids[b])) })
	return ids[:k]
}

func TestExactKNNMatchesNaiveSort(t *testing.T) {
	base, queries := Generate(Spec{Count: 2000, Queries: 25, Dim: 13, Seed: 7})
	exact := ExactKNN(base, queries, 10)
	for q := 0; q < queries.Len(); q++ {
		want := naiveKNN(base, queries.At(q), 10)
		for i, n := range exact[q] {
			if n.ID != want[i] {
				t.Fatalf("query %d rank %d: got id %d, want %d", q, i, n.ID, want[i])
			}
			if i > 0 && exact[q][i-1].Distance > n.Distance {
				t.Fatalf("query %d not sorted nearest first", q)
			}
		}
	}
}

func TestRecall(t *testing.T) {
	exact := [][]Neighbor{{{ID: 1}, {ID: 2}}, {{ID: 3}, {ID: 4}}}
	cases := []struct {
		got  [][]int
		want float64
	}{
		{[][]int{{1, 2}, {3, 4}}, 1},
		{[][]int{{2, 1}, {9, 4}}, 0.75},
		{[][]int{{}, {}}, 0},
	}
	for _, c := range cases {
		if r := Recall(exact, c.got); r != c.want {
			t.Errorf("Recall(%v) = %v, want %v", c.got, r, c.want)
		}
	}
}

func BenchmarkExactKNN(b *testing.B) {
	base, queries := Generate(Spec{Count: 20000, Queries: 100, Dim: 128, Seed: 1})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ExactKNN(base, queries, 10)
	}
	b.ReportMetric(float64(base.Len()*queries.Len()*b.N)/b.Elapsed().Seconds(), "pairs/s")
}

func BenchmarkNaiveKNN(b *testing.B) {
	base, queries := Generate(Spec{Count: 20000, Queries: 100, Dim: 128, Seed: 1})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for q := 0; q < queries.Len(); q++ {
			naiveKNN(base, queries.At(q), 10)
		}
	}
	b.ReportMetric(float64(base.Len()*queries.Len()*b.N)/b.Elapsed().Seconds(), "pairs/s")
}
