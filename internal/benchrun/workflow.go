package benchrun

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
)

// Cell is one slice setting × variant × client level, in the order the workflow measures
// them. Variant and Nodes are empty for a run without variants.
type Cell struct {
	Slices  int32  `json:"slices"`
	Variant string `json:"variant"`
	Nodes   string `json:"nodes"`
	Clients int32  `json:"clients"`
}

// Cells are the run's cells in sweep order, as bench.Sweep measures them: each slice
// setting is applied once and measured on every variant under every client level before
// the next.
func Cells(spec v1alpha1.BenchmarkRunSpec) []Cell {
	variants := Variants(spec.Variants)
	if len(variants) == 0 {
		variants = []bench.Variant{{}}
	}
	var out []Cell
	for _, s := range spec.SliceCounts {
		for _, v := range variants {
			for _, c := range spec.Clients {
				out = append(out, Cell{Slices: s, Variant: v.Name, Nodes: v.Nodes, Clients: c})
			}
		}
	}
	return out
}

// Access is how a Workflow's steps reach the cluster, by the names of what the steps mount
// (never values in parameters): the Secret with username and password, and the CA that
// signs the cluster's HTTP certificate, key ca.crt of a Secret or of a ConfigMap. Empty
// fields are absent.
type Access struct {
	CredentialsSecret, CASecret, CAConfigMap string
}

// Workflow is the Argo Workflow of a run: the named WorkflowTemplate with the run's
// parameters. The templates in workflows/ declare every parameter set here.
func Workflow(run *v1alpha1.BenchmarkRun, w Workload, name, endpoint string, access Access) *wfv1.Workflow {
	cells, _ := json.Marshal(Cells(run.Spec))
	params := map[string]string{
		"run-namespace":      run.Namespace,
		"run-name":           run.Name,
		"opensearch-url":     endpoint,
		"credentials-secret": orNone(access.CredentialsSecret),
		"ca-secret":          orNone(access.CASecret),
		"ca-configmap":       orNone(access.CAConfigMap),
		"index":              w.Index,
		"field":              w.Field,
		"dimension":          strconv.Itoa(w.Dim),
		"cells":              string(cells),
		"k":                  strconv.Itoa(w.K),
		"warmup":             w.Warmup.String(),
		"duration":           w.Duration.String(),
		"load":               w.Load,
		"dataset-count":      "0",
		"dataset-queries":    "0",
		"dataset-seed":       "0",
		"hdf5-path":          "",
		"representations":    strings.Join(representationNames(run.Spec.Representations), ","),
		"scratch-owner":      ScratchOwner(run),
		"shards":             strconv.Itoa(w.Shards),
	}
	if g := w.Generated; g != nil {
		params["dataset-count"], params["dataset-queries"], params["dataset-seed"] = strconv.Itoa(g.Count), strconv.Itoa(g.Queries), strconv.FormatUint(g.Seed, 10)
	}
	if h := run.Spec.Workload.Dataset.HDF5; h != nil {
		params["hdf5-path"] = h.Path
	}
	if run.Spec.Runner.Image != "" {
		params["image"] = run.Spec.Runner.Image
	}
	wf := &wfv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: run.Namespace, Labels: map[string]string{v1alpha1.BenchmarkRunLabel: run.Name}},
		Spec: wfv1.WorkflowSpec{
			WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: run.Spec.Runner.WorkflowTemplateRef.Name},
			ServiceAccountName:  run.Spec.Runner.ServiceAccountName,
			// The step pods carry the run's label too: a managed cluster's NetworkPolicy lets
			// them reach its HTTP port.
			PodMetadata: &wfv1.Metadata{Labels: map[string]string{v1alpha1.BenchmarkRunLabel: run.Name}},
		},
	}
	for _, k := range sortedKeys(params) {
		wf.Spec.Arguments.Parameters = append(wf.Spec.Arguments.Parameters, wfv1.Parameter{Name: k, Value: wfv1.AnyStringPtr(params[k])})
	}
	return wf
}

func representationNames(reps []v1alpha1.VectorRepresentation) []string {
	var out []string
	for _, r := range reps {
		out = append(out, string(r))
	}
	return out
}

// orNone: a Secret or ConfigMap reference cannot have an empty name; "none" names one that
// does not exist, which the templates' optional references treat as absent.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// RunnerAllowlist is what an Argo BenchmarkRun may name: the WorkflowTemplates it may
// submit, and the images and service accounts it may set. An entry ending in * matches by
// prefix.
type RunnerAllowlist struct {
	WorkflowTemplates, Images, ServiceAccounts []string
}

// RunnerAllowed says whether the operator may submit a Workflow from the run's template,
// with its image and service account: a BenchmarkRun's author must not get a pod running a
// template, an image or a service account of their choosing on the operator's authority (a
// deploy template in the same namespace may run as a powerful service account). The
// template must be on the list; empty image and service account (the template's defaults)
// are always allowed.
func RunnerAllowed(r v1alpha1.BenchmarkRunner, list RunnerAllowlist) error {
	if ref := r.WorkflowTemplateRef; ref != nil && !allowed(ref.Name, list.WorkflowTemplates) {
		return fmt.Errorf("spec.runner.workflowTemplateRef %q is not in the operator's allowed benchmark WorkflowTemplates (--benchmark-allowed-workflow-templates: %v)", ref.Name, list.WorkflowTemplates)
	}
	if r.Image != "" && !allowed(r.Image, list.Images) {
		return fmt.Errorf("spec.runner.image %q is not in the operator's allowed benchmark images (--benchmark-allowed-images: %v)", r.Image, list.Images)
	}
	if r.ServiceAccountName != "" && !allowed(r.ServiceAccountName, list.ServiceAccounts) {
		return fmt.Errorf("spec.runner.serviceAccountName %q is not in the operator's allowed benchmark service accounts (--benchmark-allowed-service-accounts: %v)", r.ServiceAccountName, list.ServiceAccounts)
	}
	return nil
}

func allowed(value string, list []string) bool {
	for _, entry := range list {
		if prefix, ok := strings.CutSuffix(entry, "*"); ok && strings.HasPrefix(value, prefix) || entry == value {
			return true
		}
	}
	return false
}

// TemplateSettle is how long after its WorkflowTemplate's creation a Workflow that Argo's
// workflow controller failed as "not found" is submitted again. That controller resolves
// the template from its informer cache, which lags the API server (by seconds on a busy
// control plane), and puts the Workflow in Error at once instead of waiting
// (argoproj/argo-workflows#14615): a template and a run applied together, as GitOps
// applies a folder, would fail for nothing. A template older than this when the Workflow
// was made is one Argo's controller cannot see for good (another namespace it does not
// watch): the failure stands.
const TemplateSettle = time.Minute

// FailedBeforeTemplateSeen says whether Argo's workflow controller failed wf only because
// its cache did not yet hold tmpl, the WorkflowTemplate the API server has now (nil: it
// has none).
func FailedBeforeTemplateSeen(wf *wfv1.Workflow, tmpl *wfv1.WorkflowTemplate) bool {
	if wf.Status.Phase != wfv1.WorkflowError || wf.Spec.WorkflowTemplateRef == nil || tmpl == nil {
		return false
	}
	notFound := fmt.Sprintf("workflowtemplates.argoproj.io %q not found", wf.Spec.WorkflowTemplateRef.Name)
	return strings.Contains(wf.Status.Message, notFound) && wf.CreationTimestamp.Sub(tmpl.CreationTimestamp.Time) < TemplateSettle
}
