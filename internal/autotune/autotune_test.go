package autotune

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// published builds a table from OpenSearch's published concurrent-segment-search results:
// at 1 client, 2 slices cut p90 46% for +3% CPU; at 8 clients, going from 2 to 4 slices
// cut p90 1% for +50% CPU. Absolute values are scaled to a 16-core node.
func published() Table {
	return Table{Cores: 16, Segments: 12, Results: []Measurement{
		{SliceCount: 1, Clients: 1, P90Ms: 100, CPUPercent: 10, QPS: 12},
		{SliceCount: 2, Clients: 1, P90Ms: 54, CPUPercent: 10.3, QPS: 20},
		{SliceCount: 4, Clients: 1, P90Ms: 50, CPUPercent: 15, QPS: 21},
		{SliceCount: 0, Clients: 1, P90Ms: 40, CPUPercent: 25, QPS: 24},
		{SliceCount: 1, Clients: 8, P90Ms: 160, CPUPercent: 40, QPS: 60},
		{SliceCount: 2, Clients: 8, P90Ms: 120, CPUPercent: 52, QPS: 70},
		{SliceCount: 4, Clients: 8, P90Ms: 118.8, CPUPercent: 78, QPS: 71},
		{SliceCount: 0, Clients: 8, P90Ms: 130, CPUPercent: 95, QPS: 62},
	}}
}

func ptr(v indexspec.Slices) *indexspec.Slices { return &v }

func TestDecide(t *testing.T) {
	cases := []struct {
		name       string
		table      Table
		params     Params
		want       indexspec.Slices
		reasonHas  string
		wantErr    error
		wantCPUMax float64
	}{
		{"1 client: 2 slices buy 46% for 0.3 CPU points; 4 slices buy too little more",
			published(), Params{HeadroomPercent: 20, MinGainPerCPUPercent: 2, Clients: 1}, 2, "2 slices cuts p90 46%", nil, 80},
		{"1 client with a loose gain demand: Lucene's default slicing is fastest and fits",
			published(), Params{HeadroomPercent: 20, MinGainPerCPUPercent: 0.1, Clients: 1}, 0, "Lucene's default slicing", nil, 80},
		{"8 clients: 2→4 slices is -1% p90 for +26 CPU points, refused",
			published(), Params{HeadroomPercent: 10, MinGainPerCPUPercent: 1, Clients: 8}, 2, "2 slices", nil, 90},
		{"8 clients with 40% headroom: only concurrent search off fits",
			published(), Params{HeadroomPercent: 55, MinGainPerCPUPercent: 1, Clients: 8}, 1, "cheapest setting under 45% CPU", nil, 45},
		{"nothing fits: least CPU, said so",
			published(), Params{HeadroomPercent: 70, MinGainPerCPUPercent: 1, Clients: 8}, 1, "no setting keeps CPU under 30%", nil, 100},
		{"interpolated between 1 and 8 clients",
			published(), Params{HeadroomPercent: 40, MinGainPerCPUPercent: 1, Clients: 4.5}, 2, "2 slices", nil, 60},
		{"load above the measured range is predicted from the highest level and said so",
			published(), Params{HeadroomPercent: 10, MinGainPerCPUPercent: 1, Clients: 20}, 2, "above the highest measured level", nil, 90},
		{"candidates exclude 2: 4 slices buy 0.7% per CPU point at 8 clients, off remains",
			published(), Params{HeadroomPercent: 10, MinGainPerCPUPercent: 1, Clients: 8, Candidates: []indexspec.Slices{1, 4}}, 1, "concurrent search off", nil, 90},
		{"candidates exclude 2: with a lower gain demand 4 slices are worth it",
			published(), Params{HeadroomPercent: 10, MinGainPerCPUPercent: 0.5, Clients: 8, Candidates: []indexspec.Slices{1, 4}}, 4, "4 slices cuts p90 26%", nil, 90},
		{"hysteresis keeps the current 2 slices when 4 slices are only 1% better",
			published(), Params{HeadroomPercent: 10, MinGainPerCPUPercent: 0, Clients: 8, Current: ptr(2), HysteresisPercent: 5}, 2, "kept 2 slices", nil, 90},
		{"hysteresis keeps a current setting that is close enough",
			published(), Params{HeadroomPercent: 10, MinGainPerCPUPercent: 0, Clients: 1, Current: ptr(4), HysteresisPercent: 30}, 4, "kept 4 slices", nil, 90},
		{"hysteresis does not keep a current setting outside the headroom",
			published(), Params{HeadroomPercent: 30, MinGainPerCPUPercent: 0, Clients: 8, Current: ptr(4), HysteresisPercent: 50}, 2, "", nil, 70},
		{"never a setting with no measurement",
			published(), Params{HeadroomPercent: 10, Clients: 1, Candidates: []indexspec.Slices{8}}, 0, "", ErrNoMeasurement, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(c.table, c.params)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.SliceCount != c.want {
				t.Errorf("chose %d (%s), want %d", d.SliceCount, d.Reason, c.want)
			}
			if !strings.Contains(d.Reason, c.reasonHas) {
				t.Errorf("reason %q does not say %q", d.Reason, c.reasonHas)
			}
			if d.PredictedCPUPercent > c.wantCPUMax {
				t.Errorf("predicted CPU %.1f above %.1f", d.PredictedCPUPercent, c.wantCPUMax)
			}
		})
	}
}

func TestDecideIsStableUnderSmallChanges(t *testing.T) {
	p := Params{HeadroomPercent: 20, MinGainPerCPUPercent: 0.2, Clients: 1, HysteresisPercent: 10}
	first, err := Decide(published(), p)
	if err != nil {
		t.Fatal(err)
	}
	// Another run measures 4 slices 3% faster than before: not worth flapping for.
	table := published()
	for i, m := range table.Results {
		if m.SliceCount == 4 {
			table.Results[i].P90Ms *= 0.97
		}
	}
	p.Current = &first.SliceCount
	second, err := Decide(table, p)
	if err != nil {
		t.Fatal(err)
	}
	if second.SliceCount != first.SliceCount {
		t.Errorf("flapped from %d to %d on a 3%% change: %s", first.SliceCount, second.SliceCount, second.Reason)
	}
}

// TestClientsInFlight: live clients are the searches in flight plus the searches outside
// the query phase, at the time outside it the table measured per search. The query rate
// alone is no measure: a query phase twice as fast as in the sweep is still one client.
func TestClientsInFlight(t *testing.T) {
	// One client: 45 ms in the query phase, 5 ms outside it; four: 60 ms and 6.7 ms.
	table := Table{Results: []Measurement{
		{SliceCount: 2, Clients: 1, QPS: 20, InFlight: 0.9},
		{SliceCount: 2, Clients: 4, QPS: 60, InFlight: 3.6},
		{SliceCount: 2, Clients: 8, QPS: 70, InFlight: 7},
		{SliceCount: 4, Clients: 1, QPS: 25},
	}}
	for _, c := range []struct {
		name          string
		slices        indexspec.Slices
		qps, inFlight float64
		want          float64
	}{
		{"one client as in the sweep", 2, 20, 0.9, 1},
		{"idle", 2, 0, 0, 0},
		{"one client, the query phase twice as fast", 2, 1 / 0.0275, 0.0225 / 0.0275, 1},
		{"four clients as in the sweep", 2, 60, 3.6, 4},
		{"between measured levels", 2, 40, 2.25, 2.25 + 40*(0.005+0.5*(0.4/60-0.005))},
		{"above the highest level", 2, 80, 9, 9 + 80*(1.0/70)},
		{"a setting without in-flight figures", 4, 50, 2.5, 2.5},
		{"a setting never measured", 16, 50, 1.2, 1.2},
	} {
		if got := ClientsInFlight(table, c.slices, c.qps, c.inFlight); math.Abs(got-c.want) > 0.01 {
			t.Errorf("%s: ClientsInFlight(%d, %.1f qps, %.2f) = %.3f, want %.3f", c.name, c.slices, c.qps, c.inFlight, got, c.want)
		}
	}
}

func TestClientsForRate(t *testing.T) {
	table := published()
	cases := []struct {
		slices indexspec.Slices
		qps    float64
		want   float64
		ok     bool
	}{
		{2, 20, 1, true},
		{2, 45, 4.5, true},
		{2, 10, 0.5, true},
		{2, 140, 16, true},
		{16, 10, 0, false},
	}
	for _, c := range cases {
		got, ok := ClientsForRate(table, c.slices, c.qps)
		if ok != c.ok || (ok && (got < c.want-0.01 || got > c.want+0.01)) {
			t.Errorf("ClientsForRate(%d, %.0f) = %.2f, %v; want %.2f, %v", c.slices, c.qps, got, ok, c.want, c.ok)
		}
	}
}

// TestLiveClients: searches in flight where the table measured them for the applied
// setting, the throughput where it did not, nothing for a setting it never measured.
func TestLiveClients(t *testing.T) {
	table := Table{Results: []Measurement{
		{SliceCount: 2, Clients: 1, QPS: 20, InFlight: 0.9},
		{SliceCount: 2, Clients: 4, QPS: 60, InFlight: 3.6},
		{SliceCount: 4, Clients: 1, QPS: 25},
		{SliceCount: 4, Clients: 2, QPS: 40},
	}}
	for _, c := range []struct {
		slices        indexspec.Slices
		qps, inFlight float64
		want          float64
		by            string
		ok            bool
	}{
		{2, 50, 0.75, 1, "searches in flight", true}, // a query phase three times as fast: 2.5 times the rate, one client
		{4, 40, 5, 2, "throughput", true},
		{1, 40, 1, 0, "", false},
	} {
		got, by, ok := LiveClients(table, c.slices, c.qps, c.inFlight)
		if ok != c.ok || by != c.by || math.Abs(got-c.want) > 0.01 {
			t.Errorf("LiveClients(%d, %.0f qps, %.1f in flight) = %.2f by %q, %v; want %.2f by %q, %v", c.slices, c.qps, c.inFlight, got, by, ok, c.want, c.by, c.ok)
		}
	}
}
