// Package crd carries the CustomResourceDefinitions the operator serves as make manifests
// generates them, so the operator binary can check the installed ones against them and
// apply them (the chart's upgrade hook: Helm never upgrades crds/).
package crd

import (
	"embed"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// All returns the operator's CRDs.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	paths, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		b, err := bases.ReadFile(p)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
