package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// TestRBACIsDocumentedVerbByVerb: every verb the operator's Roles grant has its reason in
// docs/security/operator-rbac.md, every row there is granted, and nothing is a wildcard.
func TestRBACIsDocumentedVerbByVerb(t *testing.T) {
	root := testsupport.Root(t)
	granted := map[string]bool{}
	for _, f := range []string{"config/rbac/role.yaml", "config/rbac/leader_election_role.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		var role struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(raw, &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			// resourceNames narrow a rule, but only get/update/patch/delete honour them:
			// list, watch and create would grant everything.
			named := len(r.ResourceNames) > 0 && slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "list" || v == "watch" || v == "create" || v == "deletecollection" })
			if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") || named {
				t.Errorf("%s: wildcard or unexpected rule %+v", f, r)
			}
			for _, g := range r.APIGroups {
				if g == "" {
					g = "core"
				}
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						granted[g+" "+res+" "+v] = true
					}
				}
			}
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security", "operator-rbac.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || strings.TrimSpace(cells[1]) == "API group" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		key := strings.TrimSpace(cells[1]) + " " + strings.TrimSpace(cells[2]) + " " + strings.TrimSpace(cells[3])
		if strings.TrimSpace(cells[4]) == "" {
			t.Errorf("%s: no reason", key)
		}
		documented[key] = true
	}
	for k := range granted {
		if !documented[k] {
			t.Errorf("granted without a reason in docs/security/operator-rbac.md: %s", k)
		}
	}
	for k := range documented {
		if !granted[k] {
			t.Errorf("documented but not granted: %s", k)
		}
	}
	if len(granted) < 50 {
		t.Errorf("only %d grants read", len(granted))
	}
}
