// Package helmchart renders the operator's chart with Helm's own engine (a client-only
// install, values schema included), for the tests that validate or install it.
package helmchart

import (
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version charts are rendered for (the one the tests run).
var KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}

// Render returns the objects the chart in dir renders for release name in namespace with
// values, CRDs first; hooks are not among them (see Hooks).
func Render(dir, name, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	rel, err := render(dir, name, namespace, values)
	if err != nil {
		return nil, err
	}
	return objects(rel.Manifest)
}

// Hooks returns the objects of the chart's hooks that run on event (e.g. pre-upgrade), in
// the order Helm runs them.
func Hooks(dir, name, namespace string, values map[string]any, event release.HookEvent) ([]*unstructured.Unstructured, error) {
	rel, err := render(dir, name, namespace, values)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, h := range rel.Hooks { // sorted by weight, then name, as Helm runs them
		if !slices.Contains(h.Events, event) {
			continue
		}
		o, err := objects(h.Manifest)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

func render(dir, name, namespace string, values map[string]any) (*release.Release, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly, install.DryRun, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace = name, namespace
	install.KubeVersion = KubeVersion
	return install.Run(ch, values)
}

// objects splits a rendered manifest into its objects.
func objects(manifest string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(manifest, "\n---") {
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
