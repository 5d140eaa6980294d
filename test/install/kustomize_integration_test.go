package install

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
)

// splitYAML reads a multi-document YAML stream into objects.
func splitYAML(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(stream, []byte("\n---")) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs
}

// TestKustomizeInstallsValidate builds every kustomize entry point with kustomize itself and
// validates each object like the chart's, plus the kind sandbox's OpenSearch manifest.
func TestKustomizeInstallsValidate(t *testing.T) {
	root := testsupport.Root(t)
	cp := testsupport.ControlPlane(t)
	k8s, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	kustomize := filepath.Join(root, "bin", "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		t.Fatalf("kustomize missing at %s: run hack/install-tools.sh (make test does)", kustomize)
	}
	sources := map[string][]byte{}
	for _, dir := range []string{"config/default", "config/prometheus-enabled"} {
		out, err := exec.Command(kustomize, "build", filepath.Join(root, dir)).Output()
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		sources[dir] = out
	}
	// The sandboxes' manifests pass the apiserver's own checks, CEL rules included; both
	// sandboxes apply the namespace-less ones into "search".
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "search"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, file := range []string{"opensearch.yaml", "searchcluster-managed.yaml", "vectorindex-managed.yaml"} {
		manifest, err := os.ReadFile(filepath.Join(root, "hack", "sandbox", file))
		if err != nil {
			t.Fatal(err)
		}
		sources["hack/sandbox/"+file] = manifest
	}
	for name, stream := range sources {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			objs := splitYAML(t, stream)
			kinds := map[string]bool{}
			for _, obj := range objs {
				kinds[obj.GetKind()] = true
				if obj.GetKind() == "Namespace" {
					if err := k8s.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
						t.Fatal(err)
					}
				}
			}
			for _, obj := range objs {
				if obj.GetKind() == "Namespace" {
					continue
				}
				if strings.HasPrefix(name, "hack/sandbox/") && obj.GetNamespace() == "" && obj.GetAPIVersion() == v1alpha1.GroupVersion.String() {
					obj.SetNamespace("search")
				}
				validate(t, k8s, obj)
			}
			if strings.HasPrefix(name, "config/") {
				for _, k := range []string{"CustomResourceDefinition", "ClusterRole", "Deployment", "Service", "ServiceAccount"} {
					if !kinds[k] {
						t.Errorf("%s has no %s", name, k)
					}
				}
			}
			if name == "config/prometheus-enabled" && (!kinds["ServiceMonitor"] || !kinds["PrometheusRule"]) {
				t.Errorf("%s lacks the ServiceMonitor or PrometheusRule", name)
			}
		})
	}
}
