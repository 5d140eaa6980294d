// Package helmchart renders the operator's chart with Helm's own engine (a client-only
// install, values schema included), for the tests that validate or install it.
package helmchart

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version charts are rendered for (the one the tests run).
var KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}

// Render returns the objects the chart in dir renders for release in namespace with values,
// CRDs first.
func Render(dir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly, install.DryRun, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace = release, namespace
	install.KubeVersion = KubeVersion
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(rel.Manifest, "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return nil, fmt.Errorf("rendered document is not YAML: %w\n%s", err, doc)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
