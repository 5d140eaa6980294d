package helmchart

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// schemaNode is the part of values.schema.json the table reads.
type schemaNode struct {
	Type        string                `json:"type"`
	Description string                `json:"description"`
	Properties  map[string]schemaNode `json:"properties"`
}

// ValuesTable is the Markdown table of the chart's values in dir: every value the schema
// describes (an object with properties is a heading for its members), its type, its
// default from values.yaml and the schema's description. A value without a description is
// an error: a new value is documented where it is declared.
func ValuesTable(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		return "", err
	}
	var schema schemaNode
	if err := json.Unmarshal(raw, &schema); err != nil {
		return "", err
	}
	if raw, err = os.ReadFile(filepath.Join(dir, "values.yaml")); err != nil {
		return "", err
	}
	defaults := map[string]any{}
	if err := yaml.Unmarshal(raw, &defaults); err != nil {
		return "", err
	}
	var rows, undocumented []string
	var walk func(node schemaNode, path []string, value any)
	walk = func(node schemaNode, path []string, value any) {
		if len(node.Properties) > 0 {
			m, _ := value.(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(node.Properties)) {
				walk(node.Properties[k], append(slices.Clone(path), k), m[k])
			}
			return
		}
		name := strings.Join(path, ".")
		if node.Description == "" {
			undocumented = append(undocumented, name)
		}
		def, err := json.Marshal(value)
		if err != nil || value == nil {
			def = []byte("—")
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | `%s` | %s |", name, node.Type, def, node.Description))
	}
	walk(schema, nil, defaults)
	if len(undocumented) > 0 {
		return "", fmt.Errorf("values.schema.json has no description for %s", strings.Join(undocumented, ", "))
	}
	return "| value | type | default | what it does |\n|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n", nil
}
