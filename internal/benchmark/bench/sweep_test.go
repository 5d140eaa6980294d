package bench

import "testing"

// TestPlateaued: WarmNodes stops when the throughput stops rising. The rounds of a node
// started a moment before (one client, 1.5 s rounds, 100,000 × 64 Lucene HNSW, measured)
// rise for most of a minute; the warm-up must not stop on the way, and must stop on a
// warm node's flat or noisy rounds.
func TestPlateaued(t *testing.T) {
	cold := []float64{90, 197, 343, 395, 448, 550, 672, 691, 699, 739, 747, 766, 822, 754, 841, 800, 794, 849, 874, 890, 897, 886, 942, 905, 923, 978, 947, 988, 975, 971}
	first := -1
	for n := range cold {
		if plateaued(cold[:n+1]) {
			first = n + 1
			break
		}
	}
	if first < 15 {
		t.Errorf("a cold node's rounds read as warm after %d rounds (%v), while they still rise by a third", first, cold[:max(first, 0)])
	}
	for _, warm := range [][]float64{{950, 960, 955, 948, 962, 951}, {980, 900, 1010, 930, 990, 920}} {
		if !plateaued(warm) {
			t.Errorf("a warm node's rounds %v read as still warming", warm)
		}
	}
	if plateaued([]float64{900, 910, 905}) {
		t.Error("three rounds cannot show a plateau: there is nothing to compare them with")
	}
}
