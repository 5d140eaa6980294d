package test

import (
	"reflect"
	"testing"
)

func TestMetrics(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []MetricUse
	}{
		{`sum by (namespace, index) (rate(vectorpilot_index_search_queries_total{namespace=~"$namespace"}[$__rate_interval]))`,
			[]MetricUse{{"vectorpilot_index_search_queries_total", []string{"rate", "sum"}}}},
		{`vectorpilot_node_heap_used_bytes{cluster=~"$cluster"} / vectorpilot_node_heap_max_bytes{cluster=~"$cluster"}`,
			[]MetricUse{{"vectorpilot_node_heap_used_bytes", []string{}}, {"vectorpilot_node_heap_max_bytes", []string{}}}},
		{`count(vectorpilot_index_ready{cluster=~"a|b"} == 0) or vector(0)`,
			[]MetricUse{{"vectorpilot_index_ready", []string{"count"}}}},
		{`time() - vectorpilot_snapshot_last_success_timestamp_seconds{policy="x"} > 2 * vectorpilot_snapshot_schedule_interval_seconds`,
			[]MetricUse{{"vectorpilot_snapshot_last_success_timestamp_seconds", []string{}}, {"vectorpilot_snapshot_schedule_interval_seconds", []string{}}}},
		{`100 - min by (cluster) (x_percent{a="by (b)"})`, []MetricUse{{"x_percent", []string{"min"}}}},
		{`sum(rate(a_total[5m])) / sum(rate(b_total[5m]) + rate(c_total[5m]))`,
			[]MetricUse{{"a_total", []string{"rate", "sum"}}, {"b_total", []string{"rate", "sum"}}, {"c_total", []string{"rate", "sum"}}}},
	} {
		got, err := Metrics(tc.expr)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v, %v\nwant %v", tc.expr, got, err, tc.want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	types := map[string]string{"q_total": "counter", "cpu_percent": "gauge", "lat_milliseconds": "gauge", "size_bytes": "gauge", "age_seconds": "gauge"}
	for _, tc := range []struct {
		unit, expr string
		problems   int
	}{
		{"reqps", `sum(rate(q_total[1m]))`, 0},
		{"short", `q_total`, 1},                  // a counter drawn raw
		{"percent", `rate(cpu_percent[1m])`, 1},  // a rate over a gauge
		{"s", `lat_milliseconds`, 1},             // off by 1000
		{"ms", `age_seconds`, 1},                 // off by 1000
		{"bytes", `cpu_percent`, 1},              // not bytes
		{"bytes", `size_bytes`, 0},               // bytes
		{"reqps", `cpu_percent`, 1},              // a per-second unit over a level
		{"short", `increase(q_total[1h])`, 0},    // counts per hour
		{"short", `unknown_metric + q_total`, 1}, // an unknown type is not judged
		{"short", `sum(rate(q_total[1m])`, 1},    // not PromQL: a parenthesis left open
		{"short", `rate(q_total[1m]) by (a)`, 1}, // not PromQL: a grouping on a function
	} {
		if got := CheckTarget(tc.unit, tc.expr, types); len(got) != tc.problems {
			t.Errorf("%s %s: %v, want %d problems", tc.unit, tc.expr, got, tc.problems)
		}
	}
}

func TestCheckValuesAndLegend(t *testing.T) {
	if got := CheckValues("percentunit", []float64{0, 0.5, 1}); got != nil {
		t.Errorf("ratios in range: %v", got)
	}
	if got := CheckValues("percentunit", []float64{42}); got == nil {
		t.Error("a percentage drawn as a ratio passed")
	}
	if got := CheckValues("percent", []float64{101}); got == nil {
		t.Error("101 % passed")
	}
	if got := CheckValues("s", []float64{1e9}); got != nil {
		t.Errorf("seconds have no range: %v", got)
	}
	if got := LegendLabels("{{namespace}}/{{ index }} slices={{slices}}"); !reflect.DeepEqual(got, []string{"namespace", "index", "slices"}) {
		t.Errorf("legend labels %v", got)
	}
}
