package v1alpha1_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestAdmissionAgreesWithThePlugin walks the whole space a vector field is made of — every
// value the CRD's enums allow for engine × method × dataType × spaceType × mode ×
// compressionLevel, at a dimension that is a multiple of 8 and one that is not — and, for
// each combination both sides accept, the method parameters at the bounds the CRD allows.
// Each combination is dry-run as a VectorIndex against the real API server (OpenAPI + CEL)
// and created as the mapping the operator sends (indexspec.FieldMapping) on the real node,
// the OpenSearch release the operator creates indexes on: any disagreement either way fails.
// Rules only the live cluster can tell (its version: indexspec.RefusedOn) count as
// admission's: the operator refuses those before it sends anything.
func TestAdmissionAgreesWithThePlugin(t *testing.T) {
	c := newClient(t)
	node := testsupport.OpenSearchClient(t)
	info, err := node.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	version := info.Version
	field := fieldSchema(t)
	enum := func(props map[string]apiextensionsv1.JSONSchemaProps, name string) []string {
		var out []string
		for _, v := range props[name].Enum {
			var s string
			if err := json.Unmarshal(v.Raw, &s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			t.Fatalf("the CRD's vector field %s has no enum", name)
		}
		return out
	}
	methods := enum(field.Properties["method"].Properties, "name")
	var combos []v1alpha1.VectorField
	for _, engine := range enum(field.Properties, "engine") {
		for _, method := range methods {
			for _, dataType := range enum(field.Properties, "dataType") {
				for _, space := range enum(field.Properties, "spaceType") {
					for _, mode := range enum(field.Properties, "mode") {
						for _, compression := range enum(field.Properties, "compressionLevel") {
							for _, dim := range []int32{16, 12} {
								combos = append(combos, v1alpha1.VectorField{Name: "v", Dimension: dim, DataType: dataType, SpaceType: space,
									Engine: engine, Method: v1alpha1.VectorMethod{Name: method}, Mode: mode, CompressionLevel: compression})
							}
						}
					}
				}
			}
		}
	}
	base := len(combos)
	verdicts := judge(t, c, node, version, combos)
	// Method parameters where they matter: at the CRD's bounds, on what both accept.
	params := field.Properties["method"].Properties["parameters"].Properties
	bound := func(name string, upper bool) *int32 {
		p := params[name]
		if upper {
			return ptr.To(int32(*p.Maximum))
		}
		return ptr.To(int32(*p.Minimum))
	}
	var withParams []v1alpha1.VectorField
	for i, v := range verdicts {
		if !v.admitted || !v.accepted {
			continue
		}
		for _, upper := range []bool{false, true} {
			f := combos[i]
			switch f.Method.Name {
			case "hnsw":
				f.Method.Parameters = &v1alpha1.MethodParameters{M: bound("m", upper), EfConstruction: bound("efConstruction", upper)}
			case "ivf":
				f.Method.Parameters = &v1alpha1.MethodParameters{Nlist: bound("nlist", upper), Nprobes: bound("nprobes", upper)}
			}
			withParams = append(withParams, f)
		}
	}
	combos = append(combos, withParams...)
	verdicts = append(verdicts, judge(t, c, node, version, withParams)...)

	var disagree []string
	accepted := 0
	for i, v := range verdicts {
		if v.accepted {
			accepted++
		}
		if v.admitted != v.accepted {
			side := "admission accepts what OpenSearch refuses: " + v.osError
			if v.accepted {
				side = "admission refuses what OpenSearch accepts: " + v.admissionError
			}
			disagree = append(disagree, describe(combos[i])+": "+side)
		}
	}
	sort.Strings(disagree)
	t.Logf("OpenSearch %s: %d combinations (%d of enums × dimension, %d with method parameters at their bounds), %d accepted by OpenSearch, %d disagreements",
		version, len(combos), base, len(withParams), accepted, len(disagree))
	if len(disagree) > 0 {
		t.Errorf("admission and OpenSearch %s disagree on %d of %d combinations:\n%s", version, len(disagree), len(combos), strings.Join(disagree, "\n"))
	}
}

type verdict struct {
	admitted, accepted      bool
	admissionError, osError string
}

// judge asks the API server (dry run) and OpenSearch (an index created and deleted) about
// each field, a few at a time.
func judge(t *testing.T, c client.Client, node *opensearch.Client, version string, fields []v1alpha1.VectorField) []verdict {
	out := make([]verdict, len(fields))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f := fields[i]
				vi := &v1alpha1.VectorIndex{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("space-%d", i), Namespace: "default"},
					Spec:       v1alpha1.VectorIndexSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "vectors"}, Shards: 1, Fields: []v1alpha1.VectorField{f}},
				}
				err := c.Create(t.Context(), vi, client.DryRunAll)
				if err == nil {
					err = indexspec.RefusedOn(version, &vi.Spec)
				}
				v := verdict{admitted: err == nil}
				if err != nil {
					v.admissionError = err.Error()
				}
				var osErr error
				v.accepted, v.osError, osErr = createsIndex(t.Context(), node, fmt.Sprintf("knn-space-%d", i), indexspec.FieldMapping(f))
				if osErr != nil {
					t.Errorf("%s: %v", describe(f), osErr)
				}
				out[i] = v
			}
		}()
	}
	for i := range fields {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// createsIndex says whether OpenSearch creates an index with this one knn_vector field, and
// its reason when it refuses; a created index is deleted.
func createsIndex(ctx context.Context, node *opensearch.Client, name string, mapping map[string]any) (bool, string, error) {
	settings := map[string]any{"index.knn": true, "index.number_of_shards": 1, "index.number_of_replicas": 0}
	err := node.CreateIndex(ctx, name, settings, map[string]any{"v": mapping}, nil)
	var refused *opensearch.APIError
	switch {
	case err == nil:
		return true, "", node.DeleteIndex(ctx, name)
	case errors.As(err, &refused) && refused.Status == http.StatusBadRequest:
		return false, refused.Reason, nil
	}
	return false, "", err
}

// fieldSchema is the CRD's schema of one vector field, as installed.
func fieldSchema(t *testing.T) apiextensionsv1.JSONSchemaProps {
	raw, err := os.ReadFile(filepath.Join(testsupport.Root(t), "config", "crd", "bases", "vectorpilot.io_vectorindices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1alpha1" })
	return *crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties["fields"].Items.Schema
}

func describe(f v1alpha1.VectorField) string {
	s := fmt.Sprintf("%s/%s %s %s %s %s dim %d", f.Engine, f.Method.Name, f.DataType, f.SpaceType, f.Mode, f.CompressionLevel, f.Dimension)
	if p := f.Method.Parameters; p != nil {
		b, _ := json.Marshal(p)
		s += " " + string(b)
	}
	return s
}
