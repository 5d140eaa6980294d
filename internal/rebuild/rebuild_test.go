package rebuild

import (
	"strings"
	"testing"
	"time"
)

func TestTargetNamesAreDerivedFromTheGeneration(t *testing.T) {
	if got := TargetName("products", 7); got != "products-r7" {
		t.Errorf("TargetName = %s", got)
	}
	if got := CloneName("products"); got != "products-r0" {
		t.Errorf("CloneName = %s", got)
	}
}

func TestCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		passes int32
		last   int64
		want   bool
	}{
		{1, 0, false}, // the first pass copies everything: its count says nothing of the writes since
		{1, 50000, false},
		{2, CatchUpDocuments, true},
		{2, CatchUpDocuments + 1, false},
		{MaxPasses - 1, 1 << 20, false},
		{MaxPasses, 1 << 20, true}, // a source written faster than it is copied gates anyway
	} {
		if got := CaughtUp(tc.passes, tc.last); got != tc.want {
			t.Errorf("CaughtUp(%d, %d) = %v, want %v", tc.passes, tc.last, got, tc.want)
		}
	}
}

func TestRate(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	if _, _, ok := Rate(0, 100, time.Second, now); ok {
		t.Error("a rate before anything was copied")
	}
	perSecond, eta, ok := Rate(2500, 10000, 5*time.Second, now)
	if !ok || perSecond != 500 || !eta.Equal(now.Add(15*time.Second)) {
		t.Errorf("Rate = %v, %v, %v; want 500/s, 15s from now", perSecond, eta, ok)
	}
	if _, eta, _ := Rate(10, 5, time.Second, now); !eta.Equal(now) {
		t.Errorf("more done than the total (writes during the pass): eta %v, want now", eta)
	}
}

func TestGateCheck(t *testing.T) {
	g := Gate{MinRecall: 0.95, MaxLatencyRegressionPercent: 50}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name           string
		source, target Figures
		pass           bool
		failures       []string
	}{
		{"better", Figures{0.96, ms(4)}, Figures{0.99, ms(3)}, true, nil},
		{"recall below the gate, even if the serving index is lower", Figures{0.90, ms(4)}, Figures{0.94, ms(4)}, false, []string{"recall 0.9400 is below the gate's 0.9500 (serving index: 0.9000)"}},
		{"p90 at the bound", Figures{0.99, ms(4)}, Figures{0.99, ms(6)}, true, nil},
		{"p90 above the bound", Figures{0.99, ms(4)}, Figures{0.99, ms(6.5)}, false, []string{"p90 6.50ms is above the gate's 6.00ms (serving index: 4.00ms, +50%)"}},
		{"sub-millisecond noise is measured against the floor", Figures{0.99, ms(0.2)}, Figures{0.99, ms(1.4)}, true, nil},
		{"both", Figures{0.99, ms(1)}, Figures{0.5, ms(9)}, false, []string{"recall 0.5000", "p90 9.00ms"}},
	} {
		pass, failures := g.Check(tc.source, tc.target)
		if pass != tc.pass || len(failures) != len(tc.failures) {
			t.Errorf("%s: pass %v, failures %q; want %v, %d failures", tc.name, pass, failures, tc.pass, len(tc.failures))
			continue
		}
		for i, want := range tc.failures {
			if !strings.Contains(failures[i], want) {
				t.Errorf("%s: failure %q, want it to say %q", tc.name, failures[i], want)
			}
		}
	}
}
