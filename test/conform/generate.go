package conform

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
)

// Generate reads the OpenAPI v3 documents of a running apiserver and returns the strict,
// self-contained JSON Schema of every kind in Kinds, keyed by SchemaFile.
func Generate(cfg *rest.Config) (map[string][]byte, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	byGV := map[string][]string{}
	for _, k := range Kinds {
		i := strings.LastIndex(k, "/")
		byGV[k[:i]] = append(byGV[k[:i]], k[i+1:])
	}
	docPath := func(gv string) string {
		if gv == "v1" {
			return "api/v1"
		}
		return "apis/" + gv
	}
	// A CRD's document is published a moment after the CRD is established.
	var paths map[string]openapi.GroupVersion
	for try := 0; ; try++ {
		if paths, err = dc.OpenAPIV3().Paths(); err != nil {
			return nil, err
		}
		missing := ""
		for gv := range byGV {
			if _, ok := paths[docPath(gv)]; !ok {
				missing = gv
			}
		}
		if missing == "" {
			break
		}
		if try == 60 {
			return nil, fmt.Errorf("the apiserver serves no OpenAPI document for %s", missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
	out := map[string][]byte{}
	for gv, kinds := range byGV {
		doc := paths[docPath(gv)]
		raw, err := doc.Schema("application/json")
		if err != nil {
			return nil, err
		}
		var parsed struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &parsed); err != nil {
			return nil, err
		}
		for _, kind := range kinds {
			name, err := definitionOf(parsed.Components.Schemas, gv, kind)
			if err != nil {
				return nil, err
			}
			schema, err := json.MarshalIndent(standalone(name, parsed.Components.Schemas), "", " ")
			if err != nil {
				return nil, err
			}
			out[SchemaFile(gv, kind)] = append(schema, '\n')
		}
	}
	return out, nil
}

// definitionOf finds the component schema of a kind by its x-kubernetes-group-version-kind.
func definitionOf(schemas map[string]map[string]any, gv, kind string) (string, error) {
	group, version := "", gv
	if i := strings.LastIndex(gv, "/"); i >= 0 {
		group, version = gv[:i], gv[i+1:]
	}
	for name, s := range schemas {
		gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			if m["group"] == group && m["version"] == version && m["kind"] == kind {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("no schema for %s %s", gv, kind)
}

const refPrefix = "#/components/schemas/"

// standalone is the schema of root with every definition it reaches under "definitions",
// converted from OpenAPI to JSON Schema: references rewritten, nullable as a null
// alternative, int-or-string as both types, and objects closed to unknown fields.
func standalone(root string, schemas map[string]map[string]any) map[string]any {
	defs := map[string]any{}
	queue := []string{}
	var convert func(v any) any
	convert = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			node := map[string]any{}
			for k, e := range x {
				node[k] = convert(e)
			}
			if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, refPrefix) {
				name := strings.TrimPrefix(ref, refPrefix)
				node["$ref"] = "#/definitions/" + name
				if _, seen := defs[name]; !seen {
					defs[name] = nil
					queue = append(queue, name)
				}
			}
			if node["x-kubernetes-int-or-string"] == true {
				delete(node, "format")
				node["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
			}
			_, props := node["properties"]
			_, closed := node["additionalProperties"]
			if props && !closed && node["x-kubernetes-preserve-unknown-fields"] != true {
				node["additionalProperties"] = false
			}
			if node["nullable"] == true {
				delete(node, "nullable")
				return map[string]any{"anyOf": []any{node, map[string]any{"type": "null"}}}
			}
			return node
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = convert(e)
			}
			return out
		default:
			return v
		}
	}
	top := convert(map[string]any(schemas[root])).(map[string]any)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		defs[name] = convert(map[string]any(schemas[name]))
	}
	if len(defs) > 0 {
		top["definitions"] = defs
	}
	return top
}

// sortedFiles lists the keys of files in order.
func sortedFiles(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
