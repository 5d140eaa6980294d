// Package workflows checks the Argo WorkflowTemplates of workflows/ with Argo's own
// validator (the argo-workflows Go module's lint), and that the Workflows the operator
// submits from them validate too.
package workflows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/argoproj/argo-workflows/v3/workflow/templateresolution"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/managed"
)

type templates map[string]*wfv1.WorkflowTemplate

func (t templates) Get(name string) (*wfv1.WorkflowTemplate, error) {
	if tmpl, ok := t[name]; ok {
		return tmpl, nil
	}
	return nil, fmt.Errorf("WorkflowTemplate %s not found", name)
}

func load(t *testing.T) templates {
	t.Helper()
	files, _ := filepath.Glob("../../workflows/*.yaml")
	out := templates{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if meta.Kind != "WorkflowTemplate" {
			continue
		}
		var tmpl wfv1.WorkflowTemplate
		if err := yaml.UnmarshalStrict(raw, &tmpl); err != nil {
			t.Fatalf("%s does not decode strictly as a WorkflowTemplate: %v", f, err)
		}
		out[tmpl.Name] = &tmpl
	}
	if len(out) < 2 {
		t.Fatalf("found %d WorkflowTemplates in workflows/, want the sweep and the OSB one", len(out))
	}
	return out
}

func lint(all templates, tmpl *wfv1.WorkflowTemplate) error {
	return validate.ValidateWorkflowTemplate(all, &templateresolution.NullClusterWorkflowTemplateGetter{}, tmpl, nil, validate.ValidateOpts{Lint: true})
}

// TestTemplatesPassArgoLint: every template passes; a broken one does not.
func TestTemplatesPassArgoLint(t *testing.T) {
	all := load(t)
	for name, tmpl := range all {
		if err := lint(all, tmpl); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, tmpl := range all {
		broken := tmpl.DeepCopy()
		broken.Spec.Templates[0].Steps[0].Steps[0].Template = "no-such-template"
		if err := lint(all, broken); err == nil || !strings.Contains(err.Error(), "no-such-template") {
			t.Errorf("%s with an undefined template passed the lint: %v", name, err)
		}
	}
}

// TestOperatorStepsHaveAWritableTmp: every step that runs the operator image on a read-only
// root filesystem mounts a volume at /tmp, where steps write the files Argo reads their
// outputs from and where temporary files go (os.TempDir). (When the binary still linked
// envtest, whose package init panics without a writable folder, the sweep's report step
// lacked it and exited 2 at start on the real node.)
func TestOperatorStepsHaveAWritableTmp(t *testing.T) {
	for name, tmpl := range load(t) {
		for _, step := range tmpl.Spec.Templates {
			var containers []corev1.Container
			if step.Container != nil {
				containers = append(containers, *step.Container)
			}
			if step.Script != nil {
				containers = append(containers, step.Script.Container)
			}
			var shared []corev1.VolumeMount
			if step.ContainerSet != nil {
				shared = step.ContainerSet.VolumeMounts
				for _, c := range step.ContainerSet.Containers {
					containers = append(containers, c.Container)
				}
			}
			for _, c := range containers {
				if c.Image != operatorImage || c.SecurityContext == nil || !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
					continue
				}
				if !slices.ContainsFunc(append(shared, c.VolumeMounts...), func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
					t.Errorf("%s: template %s, container %q runs the operator image on a read-only root filesystem without a volume at /tmp", name, step.Name, c.Name)
				}
			}
		}
	}
}

// operatorImage is how the templates name the operator image.
const operatorImage = "{{workflow.parameters.image}}"

// TestSubmittedWorkflowsValidate: the Workflow the operator builds for a run, from each
// template, names every parameter the template needs and passes Argo's validation.
func TestSubmittedWorkflowsValidate(t *testing.T) {
	all := load(t)
	for name := range all {
		run := &v1alpha1.BenchmarkRun{
			ObjectMeta: metav1.ObjectMeta{Name: "sweep", Namespace: "search"},
			Spec: v1alpha1.BenchmarkRunSpec{
				IndexRef:    v1alpha1.LocalObjectReference{Name: "products"},
				SliceCounts: []int32{1, 2, 4, 0}, Clients: []int32{1, 4},
				Runner: v1alpha1.BenchmarkRunner{Type: "Argo", WorkflowTemplateRef: &v1alpha1.LocalObjectReference{Name: name}},
			},
		}
		w := benchrun.Workload{Index: "products-v1", Field: "embedding", Dim: 64, K: 10, Load: "IfIncomplete", Warmup: 5 * time.Second, Duration: 15 * time.Second,
			Generated: &dataset.Spec{Count: 10000, Queries: 200, Dim: 64, Seed: 1}}
		wf := benchrun.Workflow(run, w, "sweep-abc", "https://products.search.svc:9200", benchrun.Access{CredentialsSecret: "products-vectorpilot-credentials", CAConfigMap: "products-ca-bundle"})
		if err := validate.ValidateWorkflow(all, &templateresolution.NullClusterWorkflowTemplateGetter{}, wf, nil, validate.ValidateOpts{}); err != nil {
			t.Errorf("Workflow from %s: %v", name, err)
		}
		declared := map[string]bool{}
		for _, p := range all[name].Spec.Arguments.Parameters {
			declared[p.Name] = true
		}
		for _, p := range wf.Spec.Arguments.Parameters {
			if !declared[p.Name] {
				t.Errorf("%s does not declare parameter %s the operator passes", name, p.Name)
			}
		}
	}
}

func readSample[T any](t *testing.T, name string, into *T) *T {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../../config/samples", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return into
}

// TestSIMDABPlan: the shipped A/B samples render two data pools that differ in their SIMD
// level (JVM vector width, k-NN libraries, node attribute), and the run's Workflow measures
// every slice setting on one pool then the other, each cell pinned to its pool's nodes,
// then the representations; Argo validates it.
func TestSIMDABPlan(t *testing.T) {
	sc := readSample(t, "vectorpilot_v1alpha1_searchcluster_simd_ab.yaml", &v1alpha1.SearchCluster{})
	vi := readSample(t, "vectorpilot_v1alpha1_vectorindex_simd_ab.yaml", &v1alpha1.VectorIndex{})
	run := readSample(t, "vectorpilot_v1alpha1_benchmarkrun_simd_ab.yaml", &v1alpha1.BenchmarkRun{})
	sc.Namespace, vi.Namespace, run.Namespace = "search", "search", "search"
	pools := map[string]v1alpha1.NodePool{}
	for _, p := range sc.Spec.Managed.NodePools {
		pools[p.Name] = p
		settings := managed.PoolSettings(sc, p)
		t.Logf("pool %-8s simd %-10s java %q attr %v", p.Name, managed.SIMDOf(p), managed.JavaOptions(p), settings["node.attr.vectorpilot_simd"])
	}
	for pool, want := range map[string]string{"avx2": "-XX:UseAVX=2", "spr": "-XX:UseAVX=3"} {
		if opts := managed.JavaOptions(pools[pool]); !strings.Contains(opts, want) || !strings.Contains(opts, "jdk.incubator.vector") {
			t.Errorf("pool %s java options %q, want the vector module and %s", pool, opts, want)
		}
		if got := managed.PoolSettings(sc, pools[pool])["node.attr.vectorpilot_pool"]; got != pool {
			t.Errorf("pool %s renders pool attribute %v", pool, got)
		}
	}
	if len(vi.Spec.Fields) == 0 || vi.Spec.Replicas < int32(len(run.Spec.Variants))-1 {
		t.Errorf("the A/B index needs a copy per variant pool: %d replicas for %d variants", vi.Spec.Replicas, len(run.Spec.Variants))
	}
	w, err := benchrun.Resolve(run, vi)
	if err != nil {
		t.Fatal(err)
	}
	wf := benchrun.Workflow(run, w, "simd-ab-1", managed.Endpoint(sc), benchrun.Access{CredentialsSecret: "vectors-ab-operator-credentials"})
	all := load(t)
	if err := validate.ValidateWorkflow(all, &templateresolution.NullClusterWorkflowTemplateGetter{}, wf, nil, validate.ValidateOpts{}); err != nil {
		t.Fatalf("the A/B Workflow: %v", err)
	}
	params := map[string]string{}
	for _, p := range wf.Spec.Arguments.Parameters {
		params[p.Name] = p.Value.String()
	}
	var cells []benchrun.Cell
	if err := json.Unmarshal([]byte(params["cells"]), &cells); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan (Workflow %s, template %s): prepare → %d cells → representations %q → report", wf.Name, run.Spec.Runner.WorkflowTemplateRef.Name, len(cells), params["representations"])
	for i, c := range cells {
		t.Logf("  cell %2d: slices %d  variant %-5s nodes %-25s clients %d", i+1, c.Slices, c.Variant, c.Nodes, c.Clients)
	}
	if len(cells) != len(run.Spec.SliceCounts)*len(run.Spec.Variants)*len(run.Spec.Clients) {
		t.Fatalf("%d cells", len(cells))
	}
	for i, c := range cells {
		v := run.Spec.Variants[(i/len(run.Spec.Clients))%len(run.Spec.Variants)]
		if c.Variant != v.Name || c.Nodes != "vectorpilot_pool:"+v.Pool {
			t.Errorf("cell %d: variant %s on %s, want %s on vectorpilot_pool:%s", i, c.Variant, c.Nodes, v.Name, v.Pool)
		}
	}
	if params["representations"] != "float,sq7,byte" || params["scratch-owner"] == "" {
		t.Errorf("representations %q, scratch owner %q", params["representations"], params["scratch-owner"])
	}
}

// TestOpenSearchStepsRetryOnlyTransientFailures: every sweep step that talks to OpenSearch
// (the operator image's bench commands but the report, which writes to the Kubernetes API)
// is retried when it exits benchrun.ExitTransient — an OpenSearch failure that may pass —
// and never for another exit code, as Argo's controller evaluates the expression (the
// scope it builds from the last attempt, its expression evaluator).
func TestOpenSearchStepsRetryOnlyTransientFailures(t *testing.T) {
	sweep, err := load(t).Get("vectorpilot-benchmark-sweep")
	if err != nil {
		t.Fatal(err)
	}
	retried := 0
	for _, step := range sweep.Spec.Templates {
		c := step.Container
		if c == nil || c.Image != operatorImage || !slices.Equal(c.Command[:2], []string{"/vectorpilot", "bench"}) || slices.Contains(c.Command, "report") {
			continue
		}
		rs := step.RetryStrategy
		if rs == nil || rs.Expression == "" || rs.Limit == nil {
			t.Errorf("template %s talks to OpenSearch without a bounded retry of transient failures: %+v", step.Name, rs)
			continue
		}
		retried++
		for code, want := range map[string]bool{strconv.Itoa(benchrun.ExitTransient): true, "1": false, "2": false, "-1": false} {
			scope := env.GetFuncMap(map[string]any{"retries": "0", "lastRetry.exitCode": code, "lastRetry.status": "Failed", "lastRetry.duration": "3", "lastRetry.message": ""})
			got, err := argoexpr.EvalBool(rs.Expression, scope)
			if err != nil || got != want {
				t.Errorf("template %s: retry after exit code %s is %v (%v), want %v", step.Name, code, got, err, want)
			}
		}
	}
	if retried < 4 {
		t.Errorf("%d OpenSearch steps carry the retry, want prepare/set-slices, warmup, measure and representations", retried)
	}
}
