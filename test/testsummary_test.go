package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestTheRunSummaryReadsAllItsInput: the summary at the end of hack/test.sh lists the
// slowest of many packages and tests and exits 0. Its lists once stopped reading early
// (head): under pipefail sort died of SIGPIPE and a run whose tests all passed exited 141.
// gotestsum is played by a script printing its `tool slowest` lines: this tests the
// summary's pipeline, not gotestsum.
func TestTheRunSummaryReadsAllItsInput(t *testing.T) {
	root := testsupport.Root(t)
	dir := t.TempDir()
	const lines = 3000
	var pk, slowest strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&pk, "%8.1fs  ok   github.com/vectorpilot/vectorpilot/internal/package%d (packages but test/e2e)\n", float64(i)/10, i)
		fmt.Fprintf(&slowest, "github.com/vectorpilot/vectorpilot/internal/package%d TestNumber%d %dm%d.5s\n", i, i, i/60, i%60)
	}
	packages := filepath.Join(dir, "packages")
	events := filepath.Join(dir, "events")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{events, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(packages, pk.String(), 0o644)
	write(filepath.Join(events, "packages.json"), "{}\n", 0o644)
	write(filepath.Join(dir, "slowest.txt"), slowest.String(), 0o644)
	write(filepath.Join(bin, "gotestsum"), "#!/bin/sh\ncat "+filepath.Join(dir, "slowest.txt")+"\n", 0o755)

	// SIGPIPE struck when head exited before sort's last write: a race, so several runs.
	for run := 0; run < 10; run++ {
		cmd := exec.Command("bash", filepath.Join(root, "hack", "test-summary.sh"), packages, events)
		cmd.Env = append(os.Environ(), "BIN_DIR="+bin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: the summary failed: %v\n%s", run, err, out)
		}
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(got) != 1+8+1+12 {
			t.Fatalf("run %d: want 8 packages and 12 tests listed, got %d lines:\n%s", run, len(got), out)
		}
		if want := fmt.Sprintf("%8.1fs  ok   github.com/vectorpilot/vectorpilot/internal/package%d", float64(lines)/10, lines); !strings.HasPrefix(got[1], "  "+want) {
			t.Fatalf("run %d: slowest package %q, want %q", run, got[1], want)
		}
		// 3000 → 50m0.5s: 3000.5 seconds, the slowest test.
		if want := "    3000.5s  github.com/vectorpilot/vectorpilot/internal/package3000 TestNumber3000"; got[10] != want {
			t.Fatalf("run %d: slowest test %q, want %q", run, got[10], want)
		}
	}
}
