package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestReadmeIsAnIntroduction: the README says what vectorpilot is, the two commands and a
// quick start; the reference lives in docs/. It grew to 1,176 lines once.
func TestReadmeIsAnIntroduction(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testsupport.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if n := strings.Count(readme, "\n"); n > 200 {
		t.Errorf("README.md has %d lines, at most 200: move reference material into docs/", n)
	}
	// The two commands come first (.ci/run calls the test one).
	first := strings.Index(readme, "```sh\n")
	if first < 0 || !strings.HasPrefix(readme[first:], "```sh\nmake demo") || !strings.Contains(readme[first:first+200], "\nmake test") {
		t.Error("README.md does not start with the two commands, make demo and make test")
	}
}
