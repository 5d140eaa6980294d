package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/autotune"
)

// WriteReplayMarkdown writes a replayed day as a table — per run the time-weighted
// p50/p90/p99, windows over the CPU budget, changes and the lag from each load step to the
// run's first change in it — and how the tuner and the oracle compare with the best static
// setting that kept the budget. Latencies the table has not measured show as absent.
func WriteReplayMarkdown(w io.Writer, t autotune.Table, budget float64, runs []autotune.ReplayRun) error {
	hasP50, hasP99 := false, false
	for _, m := range t.Results {
		hasP50, hasP99 = hasP50 || m.P50Ms > 0, hasP99 || m.P99Ms > 0
	}
	latency := func(v float64, measured bool) string {
		switch {
		case !measured:
			return "—"
		case v >= 100:
			return fmt.Sprintf("%.0f", v)
		default:
			return fmt.Sprintf("%.2f", v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| run | p50 | p90 | p99 | windows over %.0f%% CPU | changes | lag after each step |\n|---|---|---|---|---|---|---|\n", budget)
	var auto, oracle autotune.ReplayRun
	for _, r := range runs {
		lags := make([]string, 0, len(r.Lags))
		for _, l := range r.Lags {
			lags = append(lags, l.String())
		}
		lag := strings.Join(lags, ", ")
		if strings.HasPrefix(r.Name, "static ") {
			lag = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d of %d | %d | %s |\n", r.Name, latency(r.P50Ms, hasP50), latency(r.P90Ms, true), latency(r.P99Ms, hasP99),
			r.WindowsOverBudget, r.Windows, r.Changes, lag)
		switch r.Name {
		case "auto":
			auto = r
		case "oracle":
			oracle = r
		}
	}
	b.WriteString("\n")
	if against, ok := autotune.AutoAgainstOracle(runs); ok {
		fmt.Fprintf(&b, "Time-weighted p90: auto %+.1f%% against the oracle.", against*100)
	}
	if best, ok := autotune.BestWithinBudget(runs); ok {
		fmt.Fprintf(&b, " The best static setting within the budget is %s: auto is %s it, the oracle %s.\n",
			strings.TrimPrefix(best.Name, "static "), relativeTo(auto.P90Ms, best.P90Ms), relativeTo(oracle.P90Ms, best.P90Ms))
	} else {
		b.WriteString(" No static setting kept the budget all day.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// relativeTo says how far v lies from base: "12% below" or "3% above".
func relativeTo(v, base float64) string {
	if v <= base {
		return fmt.Sprintf("%.0f%% below", (1-v/base)*100)
	}
	return fmt.Sprintf("%.0f%% above", (v/base-1)*100)
}

// WriteReplaySVG draws the p90 of each window for the tuner, the oracle and every static
// setting, over the clients of the schedule.
func WriteReplaySVG(w io.Writer, title string, schedule []autotune.Step, window time.Duration, runs []autotune.ReplayRun) error {
	const width, height, left, top, plotW, plotH = 900, 420, 70, 50, 740, 280
	colors := []string{"#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	windows, maxP90, maxClients := 0, 0.0, 0.0
	for _, r := range runs {
		windows = max(windows, len(r.P90))
		for _, v := range r.P90 {
			maxP90 = math.Max(maxP90, v)
		}
	}
	for _, s := range schedule {
		maxClients = math.Max(maxClients, s.Clients)
	}
	if windows == 0 {
		return fmt.Errorf("no window to draw")
	}
	maxP90, maxClients = niceCeil(maxP90), niceCeil(maxClients)
	x := func(i float64) float64 { return left + i/float64(windows)*plotW }
	y := func(v, top, scale float64) float64 { return top + plotH - v/scale*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15">%s</text>`+"\n", left, escape(title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", left, top, plotW, plotH)
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		yy := y(v*maxP90, top, maxP90)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.4g</text><line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left-6, yy+4, v*maxP90, left, yy, left+plotW, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#999">%.3g</text>`+"\n", left+plotW+6, yy+4, v*maxClients)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">p90 per %s window</text><text x="%d" y="%d" fill="#999">clients</text>`+"\n", left, top-8, window, left+plotW-10, top-8)
	// The schedule's clients, grey, on the right-hand scale.
	var pts []string
	at := 0.0
	for _, s := range schedule {
		n := float64(s.Duration / window)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(at), y(s.Clients, top, maxClients), x(at+n), y(s.Clients, top, maxClients)))
		at += n
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#bbb" stroke-width="6"/>`+"\n", strings.Join(pts, " "))
	for ri, r := range runs {
		pts = pts[:0]
		for i, v := range r.P90 {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(float64(i)), y(v, top, maxP90), x(float64(i+1)), y(v, top, maxP90)))
		}
		dash := ""
		if strings.HasPrefix(r.Name, "static ") {
			dash = ` stroke-dasharray="4 3"`
		}
		color := colors[ri%len(colors)]
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", left+(ri%4)*200, top+plotH+30+(ri/4)*18, color, escape(r.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
