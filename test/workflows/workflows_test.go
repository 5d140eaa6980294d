// Package workflows checks the Argo WorkflowTemplates of workflows/ with Argo's own
// validator (the argo-workflows Go module's lint), and that the Workflows the operator
// submits from them validate too.
package workflows

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/templateresolution"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchrun"
	"github.com/vectorpilot/vectorpilot/internal/dataset"
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
		wf := benchrun.Workflow(run, w, "sweep-abc", "http://products.search.svc:9200", "")
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
