package bench

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
)

func sampleReport() Report {
	r := Report{Index: "idx<1>", Cores: 2, Segments: 8}
	for _, s := range []int{1, 2, 0} {
		for _, c := range []int{1, 4} {
			r.Results = append(r.Results, Cell{Measurement: autotune.Measurement{SliceCount: s, Clients: c, P90Ms: float64(10*c + s), CPUPercent: float64(20*c + s)}, Queries: 100})
		}
	}
	return r
}

func TestWriteSVGIsWellFormedWithALinePerClientLevelPerPanel(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	lines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 4 {
		t.Errorf("polylines = %d, want 2 client levels × 2 panels", lines)
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
