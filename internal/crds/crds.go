// Package crds keeps the installed CustomResourceDefinitions at least as new as the
// operator: it says what an installed CRD lacks that the operator needs, and applies the
// operator's own. Helm never upgrades a chart's crds/, and an API server with a CRD older
// than the operator prunes every field the old schema lacks — status fields that carry
// safety state (allocationRestricted, drainingNodes, restoreSettings) would be dropped on
// each write.
package crds

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// FieldManager owns the fields the operator applies to its CRDs.
const FieldManager = "vectorpilot-crds"

// Missing lists what wanted has that installed lacks: each version wanted serves that
// installed does not ("version v1alpha1"), and each property path of a served version's
// schema installed does not have ("v1alpha1 status.drainingNodes"). Nil: installed is at
// least as new as wanted.
func Missing(installed, wanted *apiextensionsv1.CustomResourceDefinition) []string {
	var missing []string
	for _, w := range wanted.Spec.Versions {
		if !w.Served {
			continue
		}
		i := slices.IndexFunc(installed.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == w.Name && v.Served
		})
		if i < 0 {
			missing = append(missing, "version "+w.Name)
			continue
		}
		var have, want *apiextensionsv1.JSONSchemaProps
		if s := installed.Spec.Versions[i].Schema; s != nil {
			have = s.OpenAPIV3Schema
		}
		if w.Schema != nil {
			want = w.Schema.OpenAPIV3Schema
		}
		for _, p := range missingProperties(have, want, "") {
			missing = append(missing, w.Name+" "+p)
		}
	}
	return missing
}

// missingProperties lists the property paths of want that have lacks; a whole missing
// subtree is named once, by its root.
func missingProperties(have, want *apiextensionsv1.JSONSchemaProps, path string) []string {
	if want == nil {
		return nil
	}
	if have == nil {
		if path == "" {
			return []string{"schema"}
		}
		return []string{path}
	}
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	var missing []string
	names := make([]string, 0, len(want.Properties))
	for name := range want.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w := want.Properties[name]
		h, ok := have.Properties[name]
		if !ok {
			missing = append(missing, join(name))
			continue
		}
		missing = append(missing, missingProperties(&h, &w, join(name))...)
	}
	if want.Items != nil && want.Items.Schema != nil {
		var h *apiextensionsv1.JSONSchemaProps
		if have.Items != nil {
			h = have.Items.Schema
		}
		missing = append(missing, missingProperties(h, want.Items.Schema, path+"[]")...)
	}
	if want.AdditionalProperties != nil && want.AdditionalProperties.Schema != nil {
		var h *apiextensionsv1.JSONSchemaProps
		if have.AdditionalProperties != nil {
			h = have.AdditionalProperties.Schema
		}
		missing = append(missing, missingProperties(h, want.AdditionalProperties.Schema, path+"{}")...)
	}
	return missing
}

// Outdated reads the installed CRD of each of wanted and returns, by CRD name, what it
// lacks (Missing); a CRD not installed lacks "the CRD". Empty: all are current.
func Outdated(ctx context.Context, r client.Reader, wanted []*apiextensionsv1.CustomResourceDefinition) (map[string][]string, error) {
	outdated := map[string][]string{}
	for _, w := range wanted {
		var installed apiextensionsv1.CustomResourceDefinition
		switch err := r.Get(ctx, client.ObjectKey{Name: w.Name}, &installed); {
		case apierrors.IsNotFound(err):
			outdated[w.Name] = []string{"the CRD"}
		case err != nil:
			return nil, fmt.Errorf("reading CRD %s: %w", w.Name, err)
		default:
			if m := Missing(&installed, w); len(m) > 0 {
				outdated[w.Name] = m
			}
		}
	}
	return outdated, nil
}

// Apply server-side applies wanted, taking over fields another manager (Helm's install,
// kubectl) last set: the operator's CRDs are the operator's.
func Apply(ctx context.Context, c client.Client, wanted []*apiextensionsv1.CustomResourceDefinition) error {
	for _, w := range wanted {
		crd := w.DeepCopy()
		crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
		content, err := managed.Content(crd)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: content}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying CRD %s: %w", w.Name, err)
		}
	}
	return nil
}
