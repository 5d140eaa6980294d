package autotune

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadSignalFollowsTheClients replays three pairs of sweeps measured on a local
// OpenSearch 3.6 node (2 cores; Lucene HNSW, 64-d), each the same sweep run twice:
//
//	vectorpilot bench sweep --create --index day --count 100000 --dimension 64 --segments 8 \
//	  --slices 1,2,4,0 --clients 1,2,4,8 --warmup 3s --duration 10s --out first
//	vectorpilot bench sweep --index day --count 100000 --dimension 64 \
//	  --slices 1,2,4,0 --clients 1,2,4,8 --warmup 3s --duration 10s --out second
//
// 50k-4seg: 50,000 vectors in 4 segments, slices 1,0; 100k-8seg: as above; 100k-8seg-merged:
// slices 1,0 and clients 1,2,4, the index force-merged to one segment between the two, so
// the second answers up to three times as fast — the case of a live index faster than the
// sweep. The first of a pair is the tuner's table; every cell of the second is a live load
// of known clients under one setting, read back into clients as the tuner reads it. Little's
// law over the client's loop must follow the true count better than the throughput
// reading the tuner used before, in every pair, and within the errors measured (the
// merged pair's 39 % is one cell: the first cell of its table, measured on a cold HTTP
// path, 111 %; its other cells are within 24 %).
func TestLoadSignalFollowsTheClients(t *testing.T) {
	for _, pair := range []struct {
		name   string
		within float64 // mean relative error of the reading, as measured
	}{{"50k-4seg", 0.15}, {"100k-8seg", 0.10}, {"100k-8seg-merged", 0.40}} {
		table, live := readSweep(t, pair.name+"-first.json"), readSweep(t, pair.name+"-second.json")
		var byRate, byLoop float64
		for _, m := range live.Results {
			rate, _ := ClientsForRate(table, m.SliceCount, m.QPS)
			loop := ClientsInFlight(table, m.SliceCount, m.QPS, m.InFlight)
			t.Logf("%s: setting %2d, %d clients: %7.1f qps → %5.2f clients; %4.2f in flight → %5.2f clients",
				pair.name, m.SliceCount, m.Clients, m.QPS, rate, m.InFlight, loop)
			byRate += math.Abs(rate-float64(m.Clients)) / float64(m.Clients)
			byLoop += math.Abs(loop-float64(m.Clients)) / float64(m.Clients)
		}
		n := float64(len(live.Results))
		byRate, byLoop = byRate/n, byLoop/n
		t.Logf("%s: mean relative error %.0f%% by throughput, %.0f%% by Little's law", pair.name, byRate*100, byLoop*100)
		if byLoop > pair.within || byLoop >= byRate {
			t.Errorf("%s: Little's law reading off by %.0f%% on average (throughput's %.0f%%), want under %.0f%% and under throughput's",
				pair.name, byLoop*100, byRate*100, pair.within*100)
		}
	}
}

func readSweep(t *testing.T, name string) Table {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "load-signal", name))
	if err != nil {
		t.Fatal(err)
	}
	var table Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	return table
}
