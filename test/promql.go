package test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// rangeFunctions take a counter's samples over a window; over a gauge they draw nonsense
// (a rate of a level), and a counter outside them draws an ever-growing line.
var rangeFunctions = []string{"rate", "irate", "increase"}

var (
	legendRef = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	// grafanaDurations are Grafana's interval variables, a duration in the query Prometheus gets.
	grafanaDurations = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)
	// promql is the parser of the Prometheus the tests run (test/go.mod and
	// hack/versions.env's PROMETHEUS_VERSION agree: TestVersionsHaveOneHome).
	promql = parser.NewParser(parser.Options{})
)

// MetricUse is one metric name in an expression and the functions and aggregations
// around it, innermost first.
type MetricUse struct {
	Metric    string
	Enclosing []string
}

// Metrics lists the metric names an expression selects and what encloses each, read by
// Prometheus's own parser; Grafana's interval variables stand for a duration (the other
// variables sit in label matchers' strings).
func Metrics(expr string) ([]MetricUse, error) {
	ast, err := promql.ParseExpr(grafanaDurations.ReplaceAllString(expr, "5m"))
	if err != nil {
		return nil, err
	}
	var out []MetricUse
	parser.Inspect(ast, func(node parser.Node, path []parser.Node) error {
		selector, ok := node.(*parser.VectorSelector)
		if !ok || selector.Name == "" {
			return nil
		}
		enclosing := []string{}
		for i := len(path) - 1; i >= 0; i-- {
			switch n := path[i].(type) {
			case *parser.Call:
				enclosing = append(enclosing, n.Func.Name)
			case *parser.AggregateExpr:
				enclosing = append(enclosing, n.Op.String())
			}
		}
		out = append(out, MetricUse{Metric: selector.Name, Enclosing: enclosing})
		return nil
	})
	return out, nil
}

// LegendLabels are the labels a legend format names.
func LegendLabels(legend string) []string {
	var out []string
	for _, m := range legendRef.FindAllStringSubmatch(legend, -1) {
		out = append(out, m[1])
	}
	return out
}

// CheckTarget finds what would draw a wrong line without failing a query: a counter
// outside rate/increase, a rate over a gauge, a time unit that does not match the
// metric's, bytes or a rate unit on what is neither — or a query Prometheus cannot parse. types are the metrics' types as
// Prometheus reports them (counter, gauge, …); a metric without a type is not judged.
func CheckTarget(unit, expr string, types map[string]string) []string {
	var problems []string
	uses, err := Metrics(expr)
	if err != nil {
		return []string{fmt.Sprintf("not PromQL: %v", err)}
	}
	ranged := false
	for _, u := range uses {
		inRange := slices.ContainsFunc(u.Enclosing, func(f string) bool { return slices.Contains(rangeFunctions, f) })
		ranged = ranged || inRange
		switch types[u.Metric] {
		case "counter":
			if !inRange {
				problems = append(problems, fmt.Sprintf("counter %s drawn without rate or increase", u.Metric))
			}
		case "gauge":
			if inRange {
				problems = append(problems, fmt.Sprintf("rate or increase over gauge %s", u.Metric))
			}
		}
		if unit == "s" && (strings.HasSuffix(u.Metric, "_milliseconds") || strings.HasSuffix(u.Metric, "_ms")) {
			problems = append(problems, fmt.Sprintf("unit s over %s, in milliseconds", u.Metric))
		}
		if unit == "ms" && strings.Contains(u.Metric, "_seconds") {
			problems = append(problems, fmt.Sprintf("unit ms over %s, in seconds", u.Metric))
		}
	}
	hasSuffix := func(suffix string) bool {
		return slices.ContainsFunc(uses, func(u MetricUse) bool { return strings.HasSuffix(u.Metric, suffix) })
	}
	switch unit {
	case "bytes", "decbytes":
		if !hasSuffix("_bytes") {
			problems = append(problems, "unit bytes over no _bytes metric")
		}
	case "reqps", "ops":
		if !ranged {
			problems = append(problems, "a per-second unit over no rate")
		}
	}
	return problems
}

// CheckValues finds values a unit cannot hold: a ratio (percentunit) outside [0, 1], a
// percentage outside [0, 100].
func CheckValues(unit string, values []float64) []string {
	limit := map[string]float64{"percentunit": 1, "percent": 100}[unit]
	if limit == 0 {
		return nil
	}
	for _, v := range values {
		if v < 0 || v > limit*1.0001 {
			return []string{fmt.Sprintf("value %g outside [0, %g] for unit %s", v, limit, unit)}
		}
	}
	return nil
}
