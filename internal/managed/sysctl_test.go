package managed

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRaiseMaxMapCount(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		before, after int
		fails         bool
	}{
		{"low: raised", "65530\n", 65530, MinMaxMapCount, false},
		{"high: left alone", "1048576\n", 1048576, 1048576, false},
		{"equal: left alone", "262144", MinMaxMapCount, MinMaxMapCount, false},
		{"not a number", "lots\n", 0, 0, true},
	} {
		path := filepath.Join(t.TempDir(), "max_map_count")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		before, after, err := RaiseMaxMapCount(path)
		raw, _ := os.ReadFile(path)
		if before != tc.before || after != tc.after || (err != nil) != tc.fails {
			t.Errorf("%s: %d → %d (%v), want %d → %d, fails %v", tc.name, before, after, err, tc.before, tc.after, tc.fails)
		}
		if !tc.fails && strings.TrimSpace(string(raw)) != strconv.Itoa(tc.after) {
			t.Errorf("%s: file holds %q, want %d", tc.name, raw, tc.after)
		}
	}
}
