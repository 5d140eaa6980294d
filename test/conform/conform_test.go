package conform

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/managed"
)

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			out = append(out, doc)
		}
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// TestSamplesAndSandboxConform: every sample, every manifest the kind sandbox applies, and
// the Argo CD GitOps examples (Argo CD's own CRD schemas) with their vectorpilot objects.
func TestSamplesAndSandboxConform(t *testing.T) {
	root := testsupport.Root(t)
	files, _ := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	kind, _ := filepath.Glob(filepath.Join(root, "hack", "kind", "*.yaml"))
	files = append(files, kind...)
	gitops, _ := filepath.Glob(filepath.Join(root, "docs", "gitops", "official-chart", "*.yaml"))
	files = append(files, gitops...)
	files = append(files, filepath.Join(root, "docs", "gitops", "argocd-application.yaml"), filepath.Join(root, "docs", "gitops", "argocd-cm-health.yaml"),
		filepath.Join(root, "docs", "gitops", "argocd-search.yaml"), filepath.Join(root, "docs", "gitops", "flux-kustomization.yaml"))
	if len(files) < 9 {
		t.Fatalf("found only %d manifests", len(files))
	}
	for _, f := range files {
		for i, doc := range documents(t, f) {
			if err := Validate(doc); err != nil {
				t.Errorf("%s document %d: %v", filepath.Base(f), i, err)
			}
		}
	}
}

// TestManagedClusterObjectsConform: everything the operator builds for a managed cluster,
// for the shipped sample and for one that uses every pool option.
func TestManagedClusterObjectsConform(t *testing.T) {
	root := testsupport.Root(t)
	for _, path := range []string{
		filepath.Join(root, "config", "samples", "vectorpilot_v1alpha1_searchcluster_managed.yaml"),
		filepath.Join(root, "hack", "sandbox", "searchcluster-managed.yaml"),
		filepath.Join("testdata", "searchcluster-every-option.yaml"),
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var sc v1alpha1.SearchCluster
		if err := sigsyaml.UnmarshalStrict(raw, &sc); err != nil {
			t.Fatal(err)
		}
		if sc.Namespace == "" {
			sc.Namespace = "search"
		}
		pools, svc, err := managed.Objects(&sc, managed.Live{InitialManagers: managed.InitialClusterManagerNodes(&sc)})
		if err != nil {
			t.Fatal(err)
		}
		objs := []any{svc, managed.NetworkPolicy(&sc, managed.Operator{Namespace: "vectorpilot-system"}), managed.DisruptionBudget(&sc, "green")}
		for _, p := range pools {
			objs = append(objs, p.ConfigMap, p.Headless, p.StatefulSet)
		}
		for _, o := range objs {
			if err := Validate(o); err != nil {
				t.Errorf("%s: %T: %v", filepath.Base(path), o, err)
			}
		}
	}
}

// TestBrokenObjectsAreRefused: the validator is not a rubber stamp.
func TestBrokenObjectsAreRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replicas: 1\n  replica: 2\n  serviceName: x\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}\n",
		"wrong type":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: http}]\n",
		"missing field": "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec:\n  maxUnavailable: 1\n  selector: {matchExpressions: [{key: a}]}\n",
		"bad enum":      "apiVersion: vectorpilot.io/v1alpha1\nkind: SearchCluster\nmetadata: {name: x}\nspec:\n  managed:\n    version: 3.6.0\n    nodePools: [{name: a, roles: [cluster_manager, data], simd: sse4}]\n",
		"unknown kind":  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n",
	} {
		if err := Validate([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
