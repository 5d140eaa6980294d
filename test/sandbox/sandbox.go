// Package sandbox is the real-node sandbox test/e2e and `make demo-cluster` run on: a
// single-node Kubernetes (test/harness/kubenode), the images built without a registry
// (test/harness/images) and the operator installed from its chart with the values the kind
// sandbox uses too, and the managed cluster manifests both apply (hack/sandbox/).
package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/controllers"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/simd"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
	"github.com/vectorpilot/vectorpilot/test/harness/kubenode"
	"github.com/vectorpilot/vectorpilot/test/helmchart"
)

const (
	// OperatorNamespace is where the chart is installed (restricted Pod Security).
	OperatorNamespace = "vectorpilot-system"
	// Release is the chart's release name.
	Release = "vp"
	// OpenSearchVersion is the version of the OpenSearch image the harness builds.
	OpenSearchVersion = "3.6.0"
	// UpgradeFromVersion is the version of the second OpenSearch image it builds: the
	// sandbox cluster starts at it and test/e2e upgrades it to OpenSearchVersion.
	UpgradeFromVersion = "3.5.0"
	// PrometheusVersion is the Prometheus the Prometheus Operator deploys here.
	PrometheusVersion = "v3.13.1"
	// PrometheusImage is that Prometheus's image, built here.
	PrometheusImage = images.PrometheusRepository + "prometheus:" + PrometheusVersion
)

// Sandbox is a running node with the operator installed.
type Sandbox struct {
	Cluster *kubenode.Cluster
	Client  client.Client
	// OpenSearchImage is the image managed clusters run here (see images.OpenSearch).
	OpenSearchImage string

	// NodeSIMD is the best SIMD level the node's CPU labels show (simd.Observe).
	NodeSIMD string

	root string
	// argo is hack/install-argo.sh's folder: Argo Workflows' binaries and install.yaml.
	argo string
	// prometheusOperator is hack/install-prometheus-operator.sh's folder: the operator's,
	// its config reloader's and Prometheus's binaries, and the operator's bundle.yaml.
	prometheusOperator string
}

// Up starts the node, builds (or takes from bin/images) and imports the images, and installs
// the chart; progress goes to log.
func Up(log io.Writer) (*Sandbox, error) {
	root, err := devenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{root: root, OpenSearchImage: OpenSearchImageOf(OpenSearchVersion)}
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
		{"node's SIMD level read", func() error {
			var node corev1.Node
			if err := s.Client.Get(context.Background(), client.ObjectKey{Name: kubenode.NodeName}, &node); err != nil {
				return err
			}
			s.NodeSIMD = simd.Observe(node.Labels)
			fmt.Fprintf(log, "sandbox: the node's CPU labels show %s\n", s.NodeSIMD)
			return nil
		}},
		{"Argo Workflows built (or cached)", func() (err error) { s.argo, err = s.install("install-argo.sh"); return err }},
		{"Prometheus Operator built (or cached)", func() (err error) {
			s.prometheusOperator, err = s.install("install-prometheus-operator.sh")
			return err
		}},
		{"images built (or cached) and imported", s.importImages},
		// Before the operator: it follows Workflows only if their kind is served when it starts.
		{"Argo's workflow controller available", s.installArgo},
		// Before the chart: its ServiceMonitor and PrometheusRule need their kinds served.
		{"Prometheus Operator available", s.installPrometheusOperator},
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

// Apply creates every object of a repository file (workflows/rbac.yaml, say) in namespace,
// as `kubectl create -n namespace -f path` does.
func (s *Sandbox) Apply(ctx context.Context, namespace, path string) error {
	objs, err := decodeFile(filepath.Join(s.root, path))
	if err != nil {
		return err
	}
	return s.create(ctx, namespace, objs)
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

// RunHere makes a managed cluster run on this node: the OpenSearch image built here;
// security off, because that image has no security plugin (it is not obtainable from the
// registries this machine reaches; a secured cluster on it stops at SecurityPluginMissing);
// and no pool asking for more SIMD than this machine's CPU has — the files ask for AVX-512
// levels, and a machine without them would leave every pod unschedulable by its node
// affinity (which is the operator being right, not the test passing); and no disk
// watermark, the machine's disk being shared with the rest of its work.
func (s *Sandbox) RunHere(sc *v1alpha1.SearchCluster) {
	sc.Spec.Managed.Image = OpenSearchImageOf(sc.Spec.Managed.Version)
	sc.Spec.Managed.Security.Enabled = ptr.To(false)
	nodeArch, nodeRank, known := simd.Rank(s.NodeSIMD)
	for i, p := range sc.Spec.Managed.NodePools {
		if arch, rank, ok := simd.Rank(string(p.SIMD)); known && ok && arch == nodeArch && rank > nodeRank {
			sc.Spec.Managed.NodePools[i].SIMD = v1alpha1.SIMDLevel(s.NodeSIMD)
		}
		// The real node's disk is this machine's, shared with the rest of its work and
		// found past OpenSearch's 85 % low watermark: replicas stayed unassigned
		// ([disk_threshold]) for a reason that is not the cluster's.
		if sc.Spec.Managed.NodePools[i].AdditionalConfig == nil {
			sc.Spec.Managed.NodePools[i].AdditionalConfig = map[string]string{}
		}
		sc.Spec.Managed.NodePools[i].AdditionalConfig["cluster.routing.allocation.disk.threshold_enabled"] = "false"
	}
}

// OpenSearchImageOf is the image built here of an OpenSearch version (OpenSearchVersion or
// UpgradeFromVersion).
func OpenSearchImageOf(version string) string { return images.OpenSearchTag + ":" + version }

// OperatorDeployment is the chart's Deployment name for the release.
func OperatorDeployment() string { return Release + "-vectorpilot" }

// imageBuild is an image, the files and folders it is built from, and how.
type imageBuild struct {
	name   string
	inputs []string
	build  func(work string) (images.Image, error)
}

// importImages builds (once per input change, cached in bin/images) and imports the pause,
// operator, Argo Workflows, Prometheus Operator, Prometheus and the three OpenSearch images.
func (s *Sandbox) importImages() error {
	root := s.root
	hack := filepath.Join(root, "hack", "images")
	argoexec, workflowController, argoVersion := filepath.Join(s.argo, "argoexec"), filepath.Join(s.argo, "workflow-controller"), filepath.Base(s.argo)
	promOperator, reloader, prometheus := filepath.Join(s.prometheusOperator, "operator"), filepath.Join(s.prometheusOperator, "prometheus-config-reloader"), filepath.Join(s.prometheusOperator, "prometheus")
	goSources := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), filepath.Join(root, "Dockerfile"),
		filepath.Join(root, "api"), filepath.Join(root, "cmd"), filepath.Join(root, "controllers"), filepath.Join(root, "internal")}
	builds := []imageBuild{
		{"pause", []string{filepath.Join(hack, "pause.c")}, func(w string) (images.Image, error) { return images.Pause(root, w) }},
		{"operator", goSources, func(w string) (images.Image, error) { return images.Operator(root, w) }},
		{"argoexec", []string{argoexec}, func(w string) (images.Image, error) {
			return images.Static(w, argoexec, images.ArgoRef("argoexec", argoVersion), images.ArgoUID)
		}},
		{"workflow-controller", []string{workflowController}, func(w string) (images.Image, error) {
			return images.Static(w, workflowController, images.ArgoRef("workflow-controller", argoVersion), images.ArgoUID)
		}},
		{"prometheus-operator", []string{promOperator}, func(w string) (images.Image, error) {
			return images.Static(w, promOperator, s.prometheusOperatorRef("prometheus-operator"), images.NobodyUID)
		}},
		{"prometheus-config-reloader", []string{reloader}, func(w string) (images.Image, error) {
			return images.Static(w, reloader, s.prometheusOperatorRef("prometheus-config-reloader"), images.NobodyUID)
		}},
		{"prometheus", []string{prometheus}, func(w string) (images.Image, error) {
			return images.Static(w, prometheus, PrometheusImage, images.NobodyUID)
		}},
	}
	for _, version := range []string{devenv.PreviousMajorVersion, UpgradeFromVersion, OpenSearchVersion} {
		// The image carries the JDK the local nodes of its version run with.
		jdk, err := devenv.JavaHome(root, version)
		if err != nil {
			return err
		}
		in := images.OpenSearchInputs{
			RootFS:  filepath.Join(root, "bin", "images", "rootfs-bookworm"),
			Home:    filepath.Join(root, "bin", "opensearch-"+version),
			JDK:     jdk,
			Version: version,
		}
		builds = append(builds, imageBuild{"opensearch-" + version, []string{in.RootFS + ".complete", in.Home, in.JDK, filepath.Join(hack, "opensearch-docker-entrypoint.sh"), filepath.Join(hack, "nofile-shim.c"),
			filepath.Join(root, "hack", "opensearch", "opensearch-keystore"), filepath.Join(root, "hack", "opensearch", "Keystore.java")},
			func(w string) (images.Image, error) { return images.OpenSearch(root, w, in) }})
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

// install runs one of hack/'s install scripts, which builds a real part at its pinned
// version or finds it built, and returns the folder it prints.
func (s *Sandbox) install(script string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(s.root, "hack", script))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// ArgoNamespace is where Argo Workflows' controller runs, as Argo's install guide has it.
const ArgoNamespace = "argo"

// installArgo installs Argo Workflows from its release manifest (install.yaml, which is
// `kustomize build manifests/cluster-install` of the pinned module): its CRDs, the workflow
// controller's Deployment, ServiceAccount and RBAC, with the images built here, and
// hack/argo/'s ConfigMap in place of the install's empty one. The argo-server (UI and API)
// is left out: nothing here uses it, and its image is not built.
func (s *Sandbox) installArgo() error {
	ctx := context.Background()
	objs, err := decodeFile(filepath.Join(s.argo, "install.yaml"))
	if err != nil {
		return err
	}
	var config unstructured.Unstructured
	if err := s.decode(filepath.Join("hack", "argo", "workflow-controller-configmap.yaml"), &config.Object); err != nil {
		return err
	}
	version := filepath.Base(s.argo)
	install := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ArgoNamespace}}}}
	for _, obj := range objs {
		switch {
		case strings.HasPrefix(obj.GetName(), "argo-server"):
			continue
		case obj.GetKind() == "ConfigMap" && obj.GetName() == config.GetName():
			obj = &config
		case obj.GetKind() == "Deployment" && obj.GetName() == "workflow-controller":
			if obj, err = controllerDeployment(obj, version); err != nil {
				return err
			}
		}
		install = append(install, obj)
	}
	if err := s.create(ctx, ArgoNamespace, install); err != nil {
		return err
	}
	return s.waitAvailable(ctx, ArgoNamespace, "workflow-controller")
}

// controllerDeployment is the workflow controller's Deployment running the images built
// here: its own, and argoexec as the executor every step pod starts with.
func controllerDeployment(obj *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	return withContainer(obj, func(c *corev1.Container) {
		c.Image, c.ImagePullPolicy = images.ArgoRef("workflow-controller", version), corev1.PullIfNotPresent
		c.Args = append(c.Args, "--executor-image="+images.ArgoRef("argoexec", version), "--executor-image-pull-policy=IfNotPresent")
	})
}

// withContainer is a release manifest's Deployment with its first container changed by edit.
func withContainer(obj *unstructured.Unstructured, edit func(*corev1.Container)) (*unstructured.Unstructured, error) {
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
		return nil, err
	}
	edit(&d.Spec.Template.Spec.Containers[0])
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d)
	return &unstructured.Unstructured{Object: out}, err
}

// prometheusOperatorRef is the ref of one of the Prometheus Operator's images built here.
func (s *Sandbox) prometheusOperatorRef(name string) string {
	return images.PrometheusOperatorRepository + name + ":" + filepath.Base(s.prometheusOperator)
}

// PrometheusOperatorNamespace is where the Prometheus Operator's bundle installs it.
const PrometheusOperatorNamespace = "default"

// installPrometheusOperator installs the Prometheus Operator from its release manifest
// (bundle.yaml of the pinned module: its CRDs, Deployment, ServiceAccount and RBAC) with the
// images built here: its own, and the config reloader it adds to every Prometheus pod.
func (s *Sandbox) installPrometheusOperator() error {
	ctx := context.Background()
	objs, err := decodeFile(filepath.Join(s.prometheusOperator, "bundle.yaml"))
	if err != nil {
		return err
	}
	for i, obj := range objs {
		if obj.GetKind() != "Deployment" || obj.GetName() != "prometheus-operator" {
			continue
		}
		if objs[i], err = withContainer(obj, func(c *corev1.Container) {
			c.Image, c.ImagePullPolicy = s.prometheusOperatorRef("prometheus-operator"), corev1.PullIfNotPresent
			for j, arg := range c.Args {
				if strings.HasPrefix(arg, "--prometheus-config-reloader=") {
					c.Args[j] = "--prometheus-config-reloader=" + s.prometheusOperatorRef("prometheus-config-reloader")
				}
			}
		}); err != nil {
			return err
		}
	}
	if err := s.create(ctx, PrometheusOperatorNamespace, objs); err != nil {
		return err
	}
	return s.waitAvailable(ctx, PrometheusOperatorNamespace, "prometheus-operator")
}

// MonitoringNamespace is where the sandbox's Prometheus runs (hack/prometheus/).
const MonitoringNamespace = "monitoring"

// StatsInterval is how often the sandbox's operator reads OpenSearch's statistics, and so
// how often the chart's ServiceMonitor has its metrics scraped.
const StatsInterval = 5 * time.Second

// CreatePrometheus creates hack/prometheus/'s Prometheus, which the Prometheus Operator
// configures from the chart's ServiceMonitor and PrometheusRule, with the Prometheus image
// built here. test/e2e creates it when it needs it rather than at start: on two cores, a
// second server scraping through the rolling-restart tests is load they need not carry.
func (s *Sandbox) CreatePrometheus() error {
	objs, err := decodeFile(filepath.Join(s.root, "hack", "prometheus", "prometheus.yaml"))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if obj.GetKind() == "Prometheus" {
			if err := unstructured.SetNestedField(obj.Object, PrometheusImage, "spec", "image"); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(obj.Object, PrometheusVersion, "spec", "version"); err != nil {
				return err
			}
		}
	}
	return s.create(context.Background(), MonitoringNamespace, objs)
}

// decodeFile decodes a multi-document YAML file, skipping empty documents.
func decodeFile(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, &obj)
		}
	}
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
	// Here, unlike on kind, the Prometheus Operator runs: the chart's ServiceMonitor and
	// PrometheusRule are installed too; OpenSearch's statistics are read (and so scraped)
	// every few seconds, so test/e2e need not wait minutes for rates.
	values["metrics"] = map[string]any{"statsInterval": StatsInterval.String(), "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}
	objs, err := helmchart.Render(filepath.Join(s.root, "charts", "vectorpilot"), Release, OperatorNamespace, values)
	if err != nil {
		return err
	}
	var install []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" { // the control plane has them already (the same files)
			install = append(install, obj)
		}
	}
	if err := s.create(ctx, OperatorNamespace, install); err != nil {
		return err
	}
	return s.waitAvailable(ctx, OperatorNamespace, OperatorDeployment())
}

// create creates objs in order, the namespaced ones in namespace unless they name one.
func (s *Sandbox) create(ctx context.Context, namespace string, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		namespaced, err := s.Client.IsObjectNamespaced(obj)
		if err != nil {
			return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetNamespace() == "" && namespaced {
			obj.SetNamespace(namespace)
		}
		if err := s.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// waitAvailable waits up to three minutes for a Deployment's Available condition.
func (s *Sandbox) waitAvailable(ctx context.Context, namespace, name string) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var d appsv1.Deployment
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err == nil {
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("deployment %s/%s not available after 3m\nkubelet:\n%s", namespace, name, s.Cluster.LogTail("kubelet", 40))
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
