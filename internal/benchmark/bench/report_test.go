package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

func sampleReport() Report {
	r := Report{Index: "idx<1>", Cores: 2, Segments: 8}
	for _, s := range []indexspec.Slices{1, 2, 0} {
		for _, c := range []int{1, 4} {
			r.Results = append(r.Results, Cell{Measurement: autotune.Measurement{SliceCount: s, Clients: c, P90Ms: float64(10*c + int(s)), CPUPercent: float64(20*c + int(s))}, Queries: 100})
		}
	}
	return r
}

func TestWriteSVGIsWellFormedWithALinePerClientLevelPerPanel(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	if lines := polylines(t, &buf); lines != 4 {
		t.Errorf("polylines = %d, want 2 client levels × 2 panels", lines)
	}
}

// polylines counts the lines of a well-formed SVG.
func polylines(t *testing.T, svg io.Reader) int {
	t.Helper()
	dec := xml.NewDecoder(svg)
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
}

func TestWriteCSVAndTableHaveEveryCell(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(buf.String(), "\n"); rows != 7 {
		t.Errorf("CSV lines = %d, want header + 6", rows)
	}
	if row := Row(sampleReport().Results[4]); !strings.HasPrefix(strings.TrimSpace(row), "lucene") {
		t.Errorf("Row = %q, want the lucene label first", row)
	}
	if got := orderedSlices(sampleReport()); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 0 {
		t.Errorf("orderedSlices = %v, want [1 2 0]", got)
	}
}

// TestUnmeasuredFiguresAreAbsent: a cell read back from a BenchmarkRun's status has no
// per-query figures, and one from before searches in flight were measured none of those;
// the table and the CSV show them as absent, not as 0.
func TestUnmeasuredFiguresAreAbsent(t *testing.T) {
	fromStatus := Cell{Measurement: autotune.Measurement{SliceCount: 2, Clients: 4, P90Ms: 3.5, CPUPercent: 40}}
	if fields := strings.Fields(Row(fromStatus)); len(fields) != 12 || fields[6] != "-" || fields[9] != "-" || fields[10] != "-" || fields[11] != "-" {
		t.Errorf("row %q: want in flight and the per-query columns as -", Row(fromStatus))
	}
	measured := fromStatus
	measured.Queries, measured.SearcherTasksPerQuery, measured.LoadGenCPUMsPerQuery, measured.NodeCPUMsPerQuery, measured.InFlight = 100, 2, 0.05, 1.5, 3.6
	if fields := strings.Fields(Row(measured)); len(fields) != 12 || fields[6] != "3.60" || fields[9] != "2.00" || fields[11] != "1.500" {
		t.Errorf("row %q: want the measured figures", Row(measured))
	}
	if len(Row(measured)) != len(Row(fromStatus)) {
		t.Errorf("rows of different widths:\n%s\n%s", Row(measured), Row(fromStatus))
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, Report{Results: []Cell{fromStatus}}); err != nil {
		t.Fatal(err)
	}
	if line := strings.Split(buf.String(), "\n")[1]; !strings.HasSuffix(line, ",,,,,") {
		t.Errorf("CSV line %q: want in flight, queries and the per-query figures empty", line)
	}
}

func TestDiffering(t *testing.T) {
	want := [][]int{{1, 2}, {3, 4}, {5, 6}}
	for _, tc := range []struct {
		got  [][]int
		diff int
	}{
		{[][]int{{1, 2}, {3, 4}, {5, 6}}, 0},
		{[][]int{{2, 1}, {3, 4}, {5, 7}}, 2}, // order counts
		{[][]int{{1, 2}}, 2},                 // missing answers differ
	} {
		if got := Differing(tc.got, want); got != tc.diff {
			t.Errorf("Differing(%v) = %d, want %d", tc.got, got, tc.diff)
		}
	}
}

// TestReplayMarkdown: a replay's table shows what the benchmark table measured and leaves
// out, as absent, latencies it did not (a published table with p90 only), and says how the
// tuner and the oracle compare with the best static setting that kept the budget.
func TestReplayMarkdown(t *testing.T) {
	table := autotune.Table{Results: []autotune.Measurement{
		{SliceCount: 1, Clients: 1, P90Ms: 20, CPUPercent: 10}, {SliceCount: 1, Clients: 8, P90Ms: 30, CPUPercent: 50},
		{SliceCount: 4, Clients: 1, P90Ms: 5, CPUPercent: 30}, {SliceCount: 4, Clients: 8, P90Ms: 25, CPUPercent: 99},
	}}
	schedule, _ := autotune.ParseSchedule("1x1m,8x1m")
	runs, err := autotune.Replay(autotune.ReplayConfig{Table: table, Params: autotune.Params{HeadroomPercent: 20, MinGainPerCPUPercent: 0.1},
		Sample: 10 * time.Second, Window: 30 * time.Second}, schedule)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteReplayMarkdown(&b, table, 80, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| auto | — | ", "| static concurrent search off | — | 25.00 | — | 0 of 4 | 0 | — |", "| static 4 slices | — | 15.00 | — | 2 of 4 |",
		"The best static setting within the budget is concurrent search off"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay table lacks %q:\n%s", want, out)
		}
	}
	// A tuner behind the best static setting is said to be above it, not "-N% below".
	b.Reset()
	behind := []autotune.ReplayRun{{Name: "auto", P90Ms: 30}, {Name: "static off", P90Ms: 25}, {Name: "oracle", P90Ms: 20}}
	if err := WriteReplayMarkdown(&b, table, 80, behind); err != nil {
		t.Fatal(err)
	}
	if want := "auto is 20% above it, the oracle 20% below."; !strings.Contains(b.String(), want) {
		t.Errorf("replay summary lacks %q:\n%s", want, b.String())
	}
	// A day without a static run has no oracle: no figure against it, rather than 0.
	b.Reset()
	if err := WriteReplayMarkdown(&b, table, 80, []autotune.ReplayRun{{Name: "auto", P90Ms: 30}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "against the oracle") {
		t.Errorf("a figure against an oracle that was not run:\n%s", b.String())
	}
	var svg bytes.Buffer
	if err := WriteReplaySVG(&svg, "day", schedule, 30*time.Second, runs); err != nil {
		t.Fatal(err)
	}
	if lines := polylines(t, &svg); lines != 1+len(runs) {
		t.Errorf("polylines = %d, want the schedule and one per run (%d)", lines, len(runs))
	}
}
