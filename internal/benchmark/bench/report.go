package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// TableHeader and Row print sweep cells as a terminal table, one row per cell as it ends.
const TableHeader = "slices  clients   p50 ms   p90 ms   p99 ms      qps  in flight  node cpu%  recall  tasks/q  gen cpu ms/q  node cpu ms/q"

// Row formats one cell under TableHeader. A cell read back from a BenchmarkRun's status
// has no per-query figures (the status keeps none): they show as absent, never as 0.
func Row(c Cell) string {
	perQuery := func(v float64, width, precision int) string {
		if c.Queries == 0 {
			return fmt.Sprintf("%*s", width, "-")
		}
		return fmt.Sprintf("%*.*f", width, precision, v)
	}
	inFlight := fmt.Sprintf("%9s", "-")
	if c.InFlight > 0 {
		inFlight = fmt.Sprintf("%9.2f", c.InFlight)
	}
	return fmt.Sprintf("%6s  %7d  %7.2f  %7.2f  %7.2f  %7.1f  %s  %9.1f  %6.4f  %s  %s  %s",
		c.SliceCount.Short(), c.Clients, c.P50Ms, c.P90Ms, c.P99Ms, c.QPS, inFlight, c.CPUPercent, c.Recall,
		perQuery(c.SearcherTasksPerQuery, 7, 2), perQuery(c.LoadGenCPUMsPerQuery, 12, 3), perQuery(c.NodeCPUMsPerQuery, 13, 3))
}

// WriteCSV writes one line per cell.
func WriteCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"sliceCount", "clients", "p50Ms", "p90Ms", "p99Ms", "qps", "cpuPercent", "recall", "inFlight", "queries", "searcherTasksPerQuery", "loadGenCpuMsPerQuery", "nodeCpuMsPerQuery"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, c := range r.Results {
		// Empty where not measured (a cell read back from a BenchmarkRun's status).
		inFlight, queries, perQuery := "", "", []string{"", "", ""}
		if c.InFlight > 0 {
			inFlight = f(c.InFlight)
		}
		if c.Queries > 0 {
			queries, perQuery = strconv.Itoa(c.Queries), []string{f(c.SearcherTasksPerQuery), f(c.LoadGenCPUMsPerQuery), f(c.NodeCPUMsPerQuery)}
		}
		_ = cw.Write(append([]string{strconv.Itoa(int(c.SliceCount)), strconv.Itoa(c.Clients), f(c.P50Ms), f(c.P90Ms), f(c.P99Ms), f(c.QPS), f(c.CPUPercent), f(c.Recall),
			inFlight, queries}, perQuery...))
	}
	cw.Flush()
	return cw.Error()
}

// WriteSVG draws two panels, p90 and node CPU against the slice setting, with one line per
// client level.
func WriteSVG(w io.Writer, r Report) error {
	slices := orderedSlices(r)
	var clients []int
	seen := map[int]bool{}
	for _, c := range r.Results {
		if !seen[c.Clients] {
			seen[c.Clients] = true
			clients = append(clients, c.Clients)
		}
	}
	sort.Ints(clients)
	const width, height, panelW, panelH, left, top = 900, 380, 360, 260, 70, 50
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15">%s — %d segments, %d cores</text>`+"\n", left, escape(r.Index), r.Segments, r.Cores)
	panels := []struct {
		title string
		value func(Cell) float64
	}{{"p90 service time (ms)", func(c Cell) float64 { return c.P90Ms }}, {"node CPU (%)", func(c Cell) float64 { return c.CPUPercent }}}
	for pi, panel := range panels {
		x0 := left + pi*(panelW+90)
		maxV := 0.0
		for _, c := range r.Results {
			maxV = math.Max(maxV, panel.value(c))
		}
		maxV = niceCeil(maxV)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x0, top-8, panel.title)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", x0, top, panelW, panelH)
		for i := 0; i <= 4; i++ {
			y := top + panelH - i*panelH/4
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%.4g</text><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eee"/>`+"\n", x0-6, y+4, maxV*float64(i)/4, x0, y, x0+panelW, y)
		}
		xAt := func(i int) int { return x0 + (i+1)*panelW/(len(slices)+1) }
		for i, s := range slices {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", xAt(i), top+panelH+16, s.Short())
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">slices (off = concurrent search off, lucene = default slicing)</text>`+"\n", x0+panelW/2, top+panelH+34)
		for ci, cl := range clients {
			var pts []string
			for i, s := range slices {
				for _, c := range r.Results {
					if c.SliceCount == s && c.Clients == cl {
						y := float64(top+panelH) - panel.value(c)/maxV*float64(panelH)
						pts = append(pts, fmt.Sprintf("%d,%.1f", xAt(i), y))
						fmt.Fprintf(&b, `<circle cx="%d" cy="%.1f" r="3" fill="%s"/>`+"\n", xAt(i), y, colors[ci%len(colors)])
					}
				}
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colors[ci%len(colors)])
			if pi == 0 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%d client(s)</text>`+"\n", left+ci*110, height-12, colors[ci%len(colors)], cl)
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// orderedSlices puts settings from least to most parallel: off, N ascending, Lucene's default.
func orderedSlices(r Report) []indexspec.Slices {
	seen := map[indexspec.Slices]bool{}
	var out []indexspec.Slices
	for _, c := range r.Results {
		if !seen[c.SliceCount] {
			seen[c.SliceCount] = true
			out = append(out, c.SliceCount)
		}
	}
	rank := func(s indexspec.Slices) int {
		if s == indexspec.SlicesLucene {
			return math.MaxInt
		}
		return int(s)
	}
	sort.Slice(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
