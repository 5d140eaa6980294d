package controllers_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// printedColumn is what `kubectl get` shows for obj in the named additional printer column
// of the CRD in config/crd/bases/crdFile.
func printedColumn(t *testing.T, crdFile, column string, obj any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", crdFile))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Name != column {
			continue
		}
		jp := jsonpath.New(column).AllowMissingKeys(true)
		if err := jp.Parse("{" + c.JSONPath + "}"); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := jp.Execute(&out, doc); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	t.Fatalf("%s has no printer column %s", crdFile, column)
	return ""
}
