package version

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestChartShipsThisVersion: the chart installs the release this code says it is.
func TestChartShipsThisVersion(t *testing.T) {
	raw, err := os.ReadFile("../../charts/vectorpilot/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != Version {
		t.Errorf("Chart.yaml appVersion %q, version.Version %q", chart.AppVersion, Version)
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "0.1.0", GoVersion: "go1.26"}, "vectorpilot 0.1.0, unknown revision, go1.26"},
		{Info{Version: "0.1.0", Revision: "abc", GoVersion: "go1.26"}, "vectorpilot 0.1.0, revision abc, go1.26"},
		{Info{Version: "0.1.0", Revision: "abc", Modified: true, GoVersion: "go1.26"}, "vectorpilot 0.1.0, revision abc (modified), go1.26"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.info, got, tc.want)
		}
	}
	if !strings.HasPrefix(Get().String(), "vectorpilot "+Version+", ") {
		t.Errorf("Get() = %q", Get())
	}
}
