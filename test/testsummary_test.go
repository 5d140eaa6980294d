package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestTheRunSummaryReadsAllItsInput: the summary at the end of hack/test.sh lists the
// slowest of many packages and tests and exits 0. Its lists once stopped reading early
// (head): under pipefail sort died of SIGPIPE and a run whose tests all passed exited 141.
// Beside each test, how busy the machine's cores were from its start to its end (its run
// and pass events, the CPU samples around them); ? where its events are missing.
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
	// The slowest test ran 100 s, from 01:00:00 to 01:01:40; the samples a second around it
	// say 40 of 160 jiffies busy (25 %). A sample inside it, and another test's events and
	// a subtest's beside it, must not count.
	write(filepath.Join(events, "packages.json"), strings.Join([]string{
		`{"Time":"2026-11-29T01:00:00.5Z","Action":"run","Package":"github.com/vectorpilot/vectorpilot/internal/package3000","Test":"TestNumber3000"}`,
		`{"Time":"2026-11-29T01:00:01Z","Action":"run","Package":"github.com/vectorpilot/vectorpilot/internal/package3000","Test":"TestNumber3000/sub"}`,
		`{"Time":"2026-11-29T01:00:02Z","Action":"pass","Package":"github.com/vectorpilot/vectorpilot/internal/package3000","Test":"TestNumber3000/sub","Elapsed":1}`,
		`{"Time":"2026-11-29T01:01:40.5Z","Action":"pass","Package":"github.com/vectorpilot/vectorpilot/internal/package3000","Test":"TestNumber3000","Elapsed":100}`,
		`{"Time":"2026-11-29T01:01:41Z","Action":"run","Package":"github.com/vectorpilot/vectorpilot/internal/package2999","Test":"TestNumber2999"}`,
	}, "\n")+"\n", 0o644)
	at := func(clock string) float64 {
		t.Helper()
		ts, err := time.Parse(time.RFC3339, "2026-11-29T"+clock+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return float64(ts.Unix())
	}
	samples := filepath.Join(dir, "cpu")
	write(samples, fmt.Sprintf("%.6f 900 4900\n%.6f 1000 5000\n%.6f 1020 5100\n%.6f 1040 5160\n%.6f 1500 9000\n",
		at("00:59:59"), at("01:00:00"), at("01:00:50"), at("01:01:41"), at("01:01:42")), 0o644)
	write(filepath.Join(dir, "slowest.txt"), slowest.String(), 0o644)
	write(filepath.Join(bin, "gotestsum"), "#!/bin/sh\ncat "+filepath.Join(dir, "slowest.txt")+"\n", 0o755)

	// SIGPIPE struck when head exited before sort's last write: a race, so several runs.
	for run := 0; run < 10; run++ {
		cmd := exec.Command("bash", filepath.Join(root, "hack", "test-summary.sh"), packages, events, samples)
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
		if want := "    3000.5s  github.com/vectorpilot/vectorpilot/internal/package3000 TestNumber3000  CPU 25 % busy"; got[10] != want {
			t.Fatalf("run %d: slowest test %q, want %q", run, got[10], want)
		}
		if want := "    2999.5s  github.com/vectorpilot/vectorpilot/internal/package2999 TestNumber2999  CPU ? % busy"; got[11] != want {
			t.Fatalf("run %d: second slowest test %q, want %q (its run has no end)", run, got[11], want)
		}
	}
}

// TestAWholeRunTimesItsSetUp: hack/test.sh with no arguments (make test, CI) installs the
// tools and the real parts as steps of its own, timed in the report at its end — a cold
// machine's run says what it spent installing — and a part that cannot be installed ends
// the run there, failed, before any test or node starts. make is played by a script that
// records its targets: this tests the run's order and report, not the installs.
func TestAWholeRunTimesItsSetUp(t *testing.T) {
	root := testsupport.Root(t)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >>" + calls + "\ncase \"$*\" in *real-parts*) echo 'no parts here'; exit 3;; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "make"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// A script that went on past the failed install would start a node and the whole suite:
	// bounded, and its process group stopped with it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "test.sh"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the run passed with real-parts failing:\n%s", out)
	}
	made, _ := os.ReadFile(calls)
	if got, want := strings.Fields(string(made)), []string{"--no-print-directory", "tools", "--no-print-directory", "real-parts"}; !slices.Equal(got, want) {
		t.Errorf("make ran %q, want tools then real-parts and nothing after", got)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^time by step:\n  set-up: make tools +\d+s  CPU +(\d+|\?) % busy\n  set-up: make real-parts +\d+s  CPU +(\d+|\?) % busy \(failed\)$`),
		regexp.MustCompile(`(?m)error: make real-parts failed; no test ran$`),
	} {
		if !want.Match(out) {
			t.Errorf("the run's output does not match %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "[opensearch]") {
		t.Errorf("a node started after a failed set-up:\n%s", out)
	}
}
