package dashboards

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// rangeFunctions take a counter's samples over a window; over a gauge they draw nonsense
// (a rate of a level), and a counter outside them draws an ever-growing line.
var rangeFunctions = []string{"rate", "irate", "increase"}

var (
	identifier = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	legendRef  = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
)

// aggregations are PromQL's aggregation operators, which may take a grouping before their
// argument.
var aggregations = []string{"sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio"}

// promqlKeywords are identifiers of PromQL that are not metric names.
var promqlKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}

// MetricUse is one metric name in an expression and the functions around it, innermost
// first.
type MetricUse struct {
	Metric    string
	Enclosing []string
}

// Metrics lists the metric names an expression selects and the functions enclosing each.
// It reads PromQL's shape only as far as these checks need: identifiers followed by "("
// are functions, by/without/on/ignoring lists and {…} matchers and "…" strings are
// skipped, [$…] ranges too.
func Metrics(expr string) []MetricUse {
	var out []MetricUse
	var stack []string // the function (or "") each open parenthesis belongs to
	pendingFunc := ""
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"':
			end := strings.IndexByte(expr[i+1:], '"')
			if end < 0 {
				return out
			}
			i += end + 2
		case c == '{':
			end := strings.IndexByte(expr[i:], '}')
			if end < 0 {
				return out
			}
			i += end + 1
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return out
			}
			i += end + 1
		case c == '(':
			stack = append(stack, pendingFunc)
			pendingFunc = ""
			i++
		case c == ')':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case identifier.MatchString(expr[i:]) && (i == 0 || !isWordByte(expr[i-1])):
			word := identifier.FindString(expr[i:])
			i += len(word)
			rest := strings.TrimLeft(expr[i:], " ")
			if slices.Contains(aggregations, word) {
				// sum by (a) (…): the grouping comes between the operator and its argument.
				for _, g := range []string{"by", "without"} {
					if strings.HasPrefix(rest, g) && strings.HasPrefix(strings.TrimLeft(rest[len(g):], " "), "(") {
						end := strings.IndexByte(expr[i:], ')')
						if end < 0 {
							return out
						}
						i += end + 1
						rest = strings.TrimLeft(expr[i:], " ")
						break
					}
				}
			}
			switch {
			case strings.HasPrefix(rest, "(") && slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, word):
				// A label list: skip it.
				end := strings.IndexByte(expr[i:], ')')
				if end < 0 {
					return out
				}
				i += end + 1
			case strings.HasPrefix(rest, "("):
				pendingFunc = word
			case slices.Contains(promqlKeywords, word):
			default:
				enclosing := make([]string, 0, len(stack))
				for j := len(stack) - 1; j >= 0; j-- {
					if stack[j] != "" {
						enclosing = append(enclosing, stack[j])
					}
				}
				out = append(out, MetricUse{Metric: word, Enclosing: enclosing})
			}
		default:
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == ':' || c == '$' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
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
// metric's, bytes or a rate unit on what is neither. types are the metrics' types as
// Prometheus reports them (counter, gauge, …); a metric without a type is not judged.
func CheckTarget(unit, expr string, types map[string]string) []string {
	var problems []string
	uses := Metrics(expr)
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
