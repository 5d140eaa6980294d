package crds

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/config/crd"
)

// object is a schema of type object with these properties.
func object(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
}

var str = apiextensionsv1.JSONSchemaProps{Type: "string"}

// version is a served version with this schema.
func version(name string, schema apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema}}
}

func crdOf(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions}}
}

func TestMissing(t *testing.T) {
	current := object(map[string]apiextensionsv1.JSONSchemaProps{
		"spec": object(map[string]apiextensionsv1.JSONSchemaProps{"endpoint": str, "pools": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(object(map[string]apiextensionsv1.JSONSchemaProps{"name": str, "zone": str}))}}}),
		"status": object(map[string]apiextensionsv1.JSONSchemaProps{
			"health":               str,
			"drainingNodes":        {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"allocationRestricted": {Type: "boolean"},
			"settings":             {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: ptr.To(object(map[string]apiextensionsv1.JSONSchemaProps{"value": str}))}},
		}),
	})
	older := object(map[string]apiextensionsv1.JSONSchemaProps{
		"spec": object(map[string]apiextensionsv1.JSONSchemaProps{"endpoint": str, "pools": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(object(map[string]apiextensionsv1.JSONSchemaProps{"name": str}))}}}),
		"status": object(map[string]apiextensionsv1.JSONSchemaProps{
			"health":   str,
			"settings": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: ptr.To(object(nil))}},
		}),
	})
	newer := current
	newer.Properties = map[string]apiextensionsv1.JSONSchemaProps{"extra": str}
	for k, v := range current.Properties {
		newer.Properties[k] = v
	}
	for _, tc := range []struct {
		name              string
		installed, wanted *apiextensionsv1.CustomResourceDefinition
		missing           []string
	}{
		{"same", crdOf(version("v1alpha1", current)), crdOf(version("v1alpha1", current)), nil},
		{"installed is newer: nothing missing", crdOf(version("v1alpha1", newer)), crdOf(version("v1alpha1", current)), nil},
		{"older schema: each missing path once, through arrays and maps", crdOf(version("v1alpha1", older)), crdOf(version("v1alpha1", current)),
			[]string{"v1alpha1 spec.pools[].zone", "v1alpha1 status.allocationRestricted", "v1alpha1 status.drainingNodes", "v1alpha1 status.settings{}.value"}},
		{"a served version missing", crdOf(version("v1alpha1", current)), crdOf(version("v1alpha1", current), version("v1beta1", current)), []string{"version v1beta1"}},
		{"a version installed but no longer served", crdOf(func() apiextensionsv1.CustomResourceDefinitionVersion {
			v := version("v1alpha1", current)
			v.Served = false
			return v
		}()), crdOf(version("v1alpha1", current)), []string{"version v1alpha1"}},
		{"installed without a schema", crdOf(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: true}), crdOf(version("v1alpha1", current)), []string{"v1alpha1 schema"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Missing(tc.installed, tc.wanted); !slices.Equal(got, tc.missing) {
				t.Errorf("missing %q, want %q", got, tc.missing)
			}
		})
	}
}

// TestShippedCRDsAreCompleteAgainstThemselves: the embedded CRDs parse, are the five the
// operator serves, and each lacks nothing against itself.
func TestShippedCRDsAreCompleteAgainstThemselves(t *testing.T) {
	all, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
		if m := Missing(c, c); m != nil {
			t.Errorf("%s lacks against itself: %v", c.Name, m)
		}
	}
	want := []string{"benchmarkruns.vectorpilot.io", "searchclusters.vectorpilot.io", "snapshotpolicies.vectorpilot.io", "vectorindices.vectorpilot.io", "vectorsnapshots.vectorpilot.io"}
	if !slices.Equal(names, want) {
		t.Errorf("embedded CRDs %v, want %v", names, want)
	}
}
