// Package e2e runs the product on a real node: the operator installed from its Helm chart as
// a Deployment under the chart's ServiceAccount and RBAC, and managed OpenSearch clusters
// in pods (internal/kubenode, images from internal/images). `make e2e` runs it alone; it is
// part of `make test`.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/devenv"
	"github.com/vectorpilot/vectorpilot/internal/images"
	"github.com/vectorpilot/vectorpilot/internal/kubenode"
	"github.com/vectorpilot/vectorpilot/test/helmchart"
)

const (
	operatorNamespace = "vectorpilot-system"
	release           = "vp"
	openSearchVersion = "3.6.0"
)

var (
	cluster *kubenode.Cluster
	k8s     client.Client
	root    string
	// openSearchImage is the test image managed clusters run (see images.OpenSearch).
	openSearchImage string
)

func TestMain(m *testing.M) {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" {
			os.Exit(m.Run())
		}
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = devenv.RepoRoot(); err != nil {
		return fail(err)
	}
	start := time.Now()
	if cluster, err = kubenode.Start(root); err != nil {
		return fail(fmt.Errorf("real node: %w", err))
	}
	defer cluster.Stop()
	fmt.Printf("e2e: node Ready in %s\n", time.Since(start).Round(time.Millisecond))
	if k8s, err = client.New(cluster.ControlPlane.Config, client.Options{Scheme: controllers.Scheme()}); err != nil {
		return fail(err)
	}
	start = time.Now()
	if err := importImages(); err != nil {
		return fail(err)
	}
	fmt.Printf("e2e: images built (or cached) and imported in %s\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := installChart(); err != nil {
		return fail(err)
	}
	fmt.Printf("e2e: operator Deployment available in %s\n", time.Since(start).Round(time.Millisecond))
	return m.Run()
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "FAIL: e2e set-up:", err)
	return 1
}

// importImages builds (once per input change, cached in bin/images) and imports the pause,
// operator and OpenSearch images.
func importImages() error {
	hack := filepath.Join(root, "hack", "images")
	// The image carries the JDK the local nodes run with.
	jdk, err := devenv.JavaHome(root)
	if err != nil {
		return err
	}
	in := images.OpenSearchInputs{
		RootFS:  filepath.Join(root, "bin", "images", "rootfs-bookworm"),
		Home:    filepath.Join(root, "bin", "opensearch-"+openSearchVersion),
		JDK:     jdk,
		Version: openSearchVersion,
	}
	openSearchImage = images.OpenSearchTag + ":" + openSearchVersion
	goSources := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), filepath.Join(root, "Dockerfile"),
		filepath.Join(root, "api"), filepath.Join(root, "cmd"), filepath.Join(root, "controllers"), filepath.Join(root, "internal")}
	builds := []struct {
		name   string
		inputs []string
		build  func(work string) (images.Image, error)
	}{
		{"pause", []string{filepath.Join(hack, "pause.c")}, func(w string) (images.Image, error) { return images.Pause(root, w) }},
		{"operator", goSources, func(w string) (images.Image, error) { return images.Operator(root, w) }},
		{"opensearch", []string{in.RootFS + ".complete", in.Home, in.JDK, filepath.Join(hack, "opensearch-docker-entrypoint.sh"), filepath.Join(hack, "nofile-shim.c")},
			func(w string) (images.Image, error) { return images.OpenSearch(root, w, in) }},
	}
	for _, b := range builds {
		archive, err := images.Archive(root, b.name, b.inputs, nil, b.build)
		if err != nil {
			return fmt.Errorf("image %s: %w", b.name, err)
		}
		if err := cluster.ImportImage(archive); err != nil {
			return err
		}
	}
	return nil
}

// installChart does what `helm install vp charts/vectorpilot -n vectorpilot-system` does
// (Helm's engine renders; objects are created in the chart's order), with the image the
// harness built, in a namespace enforcing the restricted Pod Security level, and waits for
// the Deployment to be available.
func installChart() error {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if err := k8s.Create(ctx, ns); err != nil {
		return err
	}
	repo, tag, _ := strings.Cut(images.OperatorRef, ":")
	objs, err := helmchart.Render(filepath.Join(root, "charts", "vectorpilot"), release, operatorNamespace, map[string]any{
		"image": map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
	})
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			continue // the control plane has them already (the same files)
		}
		if obj.GetNamespace() == "" && namespaced(obj) {
			obj.SetNamespace(operatorNamespace)
		}
		if err := k8s.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment()}, &d); err == nil {
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("operator Deployment not available after 3m\nkubelet:\n%s", cluster.LogTail("kubelet", 40))
}

func namespaced(obj *unstructured.Unstructured) bool {
	switch obj.GetKind() {
	case "ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition":
		return false
	}
	return true
}

func operatorDeployment() string { return release + "-vectorpilot" }
