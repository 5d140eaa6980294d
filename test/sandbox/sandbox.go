// Package sandbox is the real-node sandbox test/e2e and `make demo-cluster` run on: a
// single-node Kubernetes (internal/kubenode), the images built without a registry
// (internal/images) and the operator installed from its chart with the values the kind
// sandbox uses too, and the managed cluster manifests both apply (hack/sandbox/).
package sandbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/devenv"
	"github.com/vectorpilot/vectorpilot/internal/images"
	"github.com/vectorpilot/vectorpilot/internal/kubenode"
	"github.com/vectorpilot/vectorpilot/test/helmchart"
)

const (
	// OperatorNamespace is where the chart is installed (restricted Pod Security).
	OperatorNamespace = "vectorpilot-system"
	// Release is the chart's release name.
	Release = "vp"
	// OpenSearchVersion is the version of the OpenSearch image the harness builds.
	OpenSearchVersion = "3.6.0"
)

// Sandbox is a running node with the operator installed.
type Sandbox struct {
	Cluster *kubenode.Cluster
	Client  client.Client
	// OpenSearchImage is the image managed clusters run here (see images.OpenSearch).
	OpenSearchImage string

	root string
}

// Up starts the node, builds (or takes from bin/images) and imports the images, and installs
// the chart; progress goes to log.
func Up(log io.Writer) (*Sandbox, error) {
	root, err := devenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{root: root, OpenSearchImage: images.OpenSearchTag + ":" + OpenSearchVersion}
	start := time.Now()
	if s.Cluster, err = kubenode.Start(root); err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	fmt.Fprintf(log, "sandbox: node Ready in %s\n", time.Since(start).Round(time.Millisecond))
	steps := []struct {
		did string
		do  func() error
	}{
		{"client", func() (err error) {
			s.Client, err = client.New(s.Cluster.ControlPlane.Config, client.Options{Scheme: controllers.Scheme()})
			return err
		}},
		{"images built (or cached) and imported", s.importImages},
		{"operator Deployment available", s.installChart},
	}
	for _, step := range steps {
		start = time.Now()
		if err := step.do(); err != nil {
			s.Down()
			return nil, err
		}
		fmt.Fprintf(log, "sandbox: %s in %s\n", step.did, time.Since(start).Round(time.Millisecond))
	}
	return s, nil
}

// Down stops everything Up started.
func (s *Sandbox) Down() { s.Cluster.Stop() }

// Manifest decodes one of the files the kind sandbox applies too (hack/sandbox/), strictly.
func (s *Sandbox) Manifest(name string, into any) error {
	return s.decode(filepath.Join("hack", "sandbox", name), into)
}

// Sample decodes one of the samples users start from (config/samples/), strictly.
func (s *Sandbox) Sample(name string, into any) error {
	return s.decode(filepath.Join("config", "samples", name), into)
}

func (s *Sandbox) decode(path string, into any) error {
	raw, err := os.ReadFile(filepath.Join(s.root, path))
	if err != nil {
		return err
	}
	if err := sigsyaml.UnmarshalStrict(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// RunHere makes a managed cluster run on this node: the OpenSearch image built here, and
// security off, because that image has no security plugin (it is not obtainable from the
// registries this machine reaches; a secured cluster on it stops at SecurityPluginMissing).
func (s *Sandbox) RunHere(sc *v1alpha1.SearchCluster) {
	sc.Spec.Managed.Image = s.OpenSearchImage
	sc.Spec.Managed.Security.Enabled = ptr.To(false)
}

// OperatorDeployment is the chart's Deployment name for the release.
func OperatorDeployment() string { return Release + "-vectorpilot" }

// importImages builds (once per input change, cached in bin/images) and imports the pause,
// operator and OpenSearch images.
func (s *Sandbox) importImages() error {
	root := s.root
	hack := filepath.Join(root, "hack", "images")
	// The image carries the JDK the local nodes run with.
	jdk, err := devenv.JavaHome(root)
	if err != nil {
		return err
	}
	in := images.OpenSearchInputs{
		RootFS:  filepath.Join(root, "bin", "images", "rootfs-bookworm"),
		Home:    filepath.Join(root, "bin", "opensearch-"+OpenSearchVersion),
		JDK:     jdk,
		Version: OpenSearchVersion,
	}
	goSources := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), filepath.Join(root, "Dockerfile"),
		filepath.Join(root, "api"), filepath.Join(root, "cmd"), filepath.Join(root, "controllers"), filepath.Join(root, "internal")}
	builds := []struct {
		name   string
		inputs []string
		build  func(work string) (images.Image, error)
	}{
		{"pause", []string{filepath.Join(hack, "pause.c")}, func(w string) (images.Image, error) { return images.Pause(root, w) }},
		{"operator", goSources, func(w string) (images.Image, error) { return images.Operator(root, w) }},
		{"opensearch", []string{in.RootFS + ".complete", in.Home, in.JDK, filepath.Join(hack, "opensearch-docker-entrypoint.sh"), filepath.Join(hack, "nofile-shim.c"),
			filepath.Join(root, "hack", "opensearch", "opensearch-keystore"), filepath.Join(root, "hack", "opensearch", "Keystore.java")},
			func(w string) (images.Image, error) { return images.OpenSearch(root, w, in) }},
	}
	for _, b := range builds {
		archive, err := images.Archive(root, b.name, b.inputs, nil, b.build)
		if err != nil {
			return fmt.Errorf("image %s: %w", b.name, err)
		}
		if err := s.Cluster.ImportImage(archive); err != nil {
			return err
		}
	}
	return nil
}

// installChart does what `helm install vp charts/vectorpilot -n vectorpilot-system` does
// (Helm's engine renders; objects are created in the chart's order), with the image the
// harness built, in a namespace enforcing the restricted Pod Security level, and waits for
// the Deployment to be available.
func (s *Sandbox) installChart() error {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if err := s.Client.Create(ctx, ns); err != nil {
		return err
	}
	// The kind sandbox installs the chart with the same values file.
	var values map[string]any
	if err := s.Manifest("values.yaml", &values); err != nil {
		return err
	}
	image, _ := values["image"].(map[string]any)
	if ref := fmt.Sprintf("%v:%v", image["repository"], image["tag"]); ref != images.OperatorRef {
		return fmt.Errorf("hack/sandbox/values.yaml names the operator image %s; the harness builds %s", ref, images.OperatorRef)
	}
	objs, err := helmchart.Render(filepath.Join(s.root, "charts", "vectorpilot"), Release, OperatorNamespace, values)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			continue // the control plane has them already (the same files)
		}
		if obj.GetNamespace() == "" && namespaced(obj) {
			obj.SetNamespace(OperatorNamespace)
		}
		if err := s.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var d appsv1.Deployment
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment()}, &d); err == nil {
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("operator Deployment not available after 3m\nkubelet:\n%s", s.Cluster.LogTail("kubelet", 40))
}

func namespaced(obj *unstructured.Unstructured) bool {
	switch obj.GetKind() {
	case "ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition":
		return false
	}
	return true
}

// Get is an HTTP GET that wants 200 and returns the body.
func Get(url string) (string, error) {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, body)
	}
	return string(body), nil
}

// WaitReady waits until obj's Ready condition is True, reading obj again every two seconds;
// each new Ready message is written to progress when it is not nil.
func (s *Sandbox) WaitReady(ctx context.Context, obj client.Object, conditions func() []metav1.Condition, timeout time.Duration, progress io.Writer) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(conditions(), v1alpha1.ConditionReady)
		if ready != nil && ready.Message != last && progress != nil {
			fmt.Fprintf(progress, "  %s %s: Ready=%s %s: %s\n", time.Now().Format("15:04:05"), obj.GetName(), ready.Status, ready.Reason, ready.Message)
			last = ready.Message
		}
		if ready != nil && ready.Status == metav1.ConditionTrue {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%T %s not Ready after %s: %+v", obj, obj.GetName(), timeout, conditions())
		}
		time.Sleep(2 * time.Second)
	}
}

// RecallRun is a Local BenchmarkRun on index: vectors generated vectors loaded, recall@10
// of 200 queries against brute force, one cell per slice count with one client.
func RecallRun(namespace, name, index string, vectors int32, slices ...int32) *v1alpha1.BenchmarkRun {
	return &v1alpha1.BenchmarkRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha1.BenchmarkRunSpec{
			IndexRef: v1alpha1.LocalObjectReference{Name: index},
			Workload: v1alpha1.BenchmarkWorkload{
				Dataset:  v1alpha1.BenchmarkDataset{Generated: &v1alpha1.GeneratedDataset{Count: vectors, Queries: 200, Seed: 7}},
				K:        10,
				Warmup:   metav1.Duration{Duration: time.Second},
				Duration: metav1.Duration{Duration: 5 * time.Second},
			},
			SliceCounts: slices,
			Clients:     []int32{1},
			Runner:      v1alpha1.BenchmarkRunner{Type: v1alpha1.RunnerLocal},
		},
	}
}

// WaitSucceeded waits for run to succeed; Failed, or no end within timeout, is an error.
func (s *Sandbox) WaitSucceeded(ctx context.Context, run *v1alpha1.BenchmarkRun, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			return err
		}
		if run.Status.Phase == v1alpha1.BenchmarkSucceeded {
			return nil
		}
		if run.Status.Phase == v1alpha1.BenchmarkFailed || time.Now().After(deadline) {
			return fmt.Errorf("BenchmarkRun %s %s: %+v", run.Name, run.Status.Phase, run.Status.Conditions)
		}
		time.Sleep(2 * time.Second)
	}
}
