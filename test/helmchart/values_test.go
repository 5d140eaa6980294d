package helmchart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallDocsHaveTheValuesTable keeps docs/install.md's values table the one
// values.schema.json and values.yaml describe.
func TestInstallDocsHaveTheValuesTable(t *testing.T) {
	table, err := ValuesTable(filepath.Join("..", "..", "charts", "vectorpilot"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), table) {
		t.Errorf("docs/install.md lacks the current values table; put in:\n%s", table)
	}
}
