// Package conform validates Kubernetes objects offline with kubeconform against the JSON
// Schemas shipped in schemas/: strict schemas (unknown fields are errors) converted from
// the OpenAPI v3 documents of the pinned kube-apiserver with vectorpilot's and the
// Prometheus Operator's CRDs installed. TestShippedSchemasAreCurrent regenerates them and
// fails when they differ (`make schemas` writes them).
package conform

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// Kinds are the kinds the project renders, whose schemas are shipped.
var Kinds = []string{
	"v1/ConfigMap", "v1/Namespace", "v1/Secret", "v1/Service", "v1/ServiceAccount",
	"apps/v1/Deployment", "apps/v1/StatefulSet", "batch/v1/Job",
	"policy/v1/PodDisruptionBudget", "networking.k8s.io/v1/NetworkPolicy",
	"rbac.authorization.k8s.io/v1/ClusterRole", "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
	"rbac.authorization.k8s.io/v1/Role", "rbac.authorization.k8s.io/v1/RoleBinding",
	"coordination.k8s.io/v1/Lease",
	"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule",
	"vectorpilot.io/v1alpha1/SearchCluster", "vectorpilot.io/v1alpha1/VectorIndex",
	"vectorpilot.io/v1alpha1/VectorSnapshot", "vectorpilot.io/v1alpha1/SnapshotPolicy",
	"vectorpilot.io/v1alpha1/BenchmarkRun",
	"argoproj.io/v1alpha1/Application", "argoproj.io/v1alpha1/ApplicationSet",
	"kustomize.toolkit.fluxcd.io/v1/Kustomization", "source.toolkit.fluxcd.io/v1/GitRepository",
}

// ArgoCDVersion is the Argo CD release whose Application and ApplicationSet CRDs the
// GitOps examples are validated against (hack/versions.env ARGOCD_VERSION).
const ArgoCDVersion = "v3.5.7"

// FluxKustomizeControllerVersion and FluxSourceControllerVersion are the Flux controllers
// whose Kustomization and GitRepository CRDs the Flux examples are validated against
// (hack/versions.env).
const (
	FluxKustomizeControllerVersion = "v1.9.6"
	FluxSourceControllerVersion    = "v1.9.6"
)

// SchemaDir is the folder of the shipped schemas.
func SchemaDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "schemas")
}

// SchemaFile is where the schema of apiVersion and kind lives, in kubeconform's
// {{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json layout.
func SchemaFile(apiVersion, kind string) string {
	parts := strings.Split(apiVersion, "/")
	return filepath.Join(parts[0], strings.ToLower(kind)+"_"+parts[len(parts)-1]+".json")
}

var (
	once sync.Once
	val  validator.Validator
	err  error
)

func shared() (validator.Validator, error) {
	once.Do(func() {
		val, err = validator.New([]string{SchemaDir() + "/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"},
			validator.Opts{Strict: true, KubernetesVersion: "1.37.0", SkipKinds: map[string]struct{}{
				// CRDs are proven by the apiserver installing them in every test run.
				"CustomResourceDefinition": {},
			}})
	})
	return val, err
}

// Validate validates one object (a typed object as the operator applies it, an
// unstructured map, or YAML/JSON bytes) and returns kubeconform's findings, nil when it
// conforms. A kind without a shipped schema is an error, never a silent pass.
func Validate(obj any) error {
	v, err := shared()
	if err != nil {
		return err
	}
	if typed, ok := obj.(k8sruntime.Object); ok {
		if obj, err = managed.Content(typed); err != nil {
			return err
		}
	}
	raw, ok := obj.([]byte)
	if !ok {
		if raw, err = yaml.Marshal(obj); err != nil {
			return err
		}
	}
	res := v.ValidateResource(resource.Resource{Path: "object", Bytes: raw})
	switch res.Status {
	case validator.Valid, validator.Skipped:
		return nil
	default:
		return fmt.Errorf("%v", res.Err)
	}
}
