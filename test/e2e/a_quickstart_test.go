package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/pki"
	"github.com/vectorpilot/vectorpilot/internal/security"
)

// The OpenSearch the README's quick start points at: the official OpenSearch chart's client
// Service, in the namespace that chart was installed in.
const (
	userOpenSearchNamespace = "opensearch"
	userOpenSearchService   = "opensearch-cluster-master"
)

// TestQuickStartAsWritten runs first (go test runs a package's files in name order), on a
// node where no test has made anything yet: the shell blocks of the README's "Quick start on a cluster",
// in order, as a user runs them — `make image`, `helm install`, `kubectl` (the helm and kubectl of
// this project's pinned versions) — against what the quick start assumes the user has: an
// OpenSearch with the k-NN plugin behind TLS and a password, at the official chart's Service
// name. That OpenSearch is a local node behind nginx (TLS from a private CA, basic auth:
// it stands in for the security plugin, which cannot be installed here) on the host end of
// the node's link, and the Service points there. What differs from a user's run: the
// image goes into the node's containerd as `kind load image-archive` does, in place of
// `crane push` (no registry runs here), and the password placeholder is a password. The
// sandbox's operator is stopped meanwhile (two operators must not act on one object); at
// the end the release is uninstalled and both namespaces are gone, as before.
func TestQuickStartAsWritten(t *testing.T) {
	integration(t)
	ctx := context.Background()
	root := testsupport.Root(t)
	for _, install := range [][]string{{"install-kube.sh", "kubectl"}, {"install-tools.sh"}} {
		if out, err := exec.Command("bash", append([]string{filepath.Join(root, "hack", install[0])}, install[1:]...)...).CombinedOutput(); err != nil {
			t.Fatalf("hack/%s: %v\n%s", install[0], err, out)
		}
	}
	build, rest := quickStartScripts(t, filepath.Join(root, "README.md"))

	stopSandboxOperator(t)
	password, err := security.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	upstream := startUserOpenSearch(t, root, password)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), upstream.ca, 0o600); err != nil {
		t.Fatal(err)
	}
	rest = replaceOnce(t, rest, "password='…'", "password='"+password+"'")
	rest = replaceOnce(t, rest, "ca.crt=ca.pem", "ca.crt="+filepath.Join(dir, "ca.pem"))
	t.Cleanup(func() { uninstallQuickStart(t) })

	shell := func(step, script string) {
		t.Helper()
		runCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig,
			"PATH="+filepath.Join(root, "bin", "k8s", devenv.DefaultKubeVersion)+":"+filepath.Join(root, "bin")+":"+os.Getenv("PATH"))
		started := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("%s (%s):\n%s", step, time.Since(started).Round(time.Second), out)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	shell("1. build the image", build)
	if err := cluster.ImportImage(filepath.Join(root, "bin", "vectorpilot-image.tar")); err != nil {
		t.Fatal(err)
	}
	shell("2–4. install the chart, point a SearchCluster at the OpenSearch, declare an index", rest)

	// What the user was told they would see: the index in their OpenSearch, as declared,
	// made by the operator the chart installed, reaching the cluster over verified TLS.
	var mapping map[string]struct {
		Mappings struct {
			Properties map[string]struct {
				Type      string `json:"type"`
				Dimension int    `json:"dimension"`
				Method    struct {
					Engine string `json:"engine"`
				} `json:"method"`
			} `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal([]byte(testsupport.Send(t, "GET", upstream.node+"/products-v1/_mapping", "")), &mapping); err != nil {
		t.Fatal(err)
	}
	if f := mapping["products-v1"].Mappings.Properties["embedding"]; f.Type != "knn_vector" || f.Dimension != 768 || f.Method.Engine != "faiss" {
		t.Errorf("products-v1's embedding field %+v, want a 768-dimension faiss knn_vector", f)
	}
	sc := &v1alpha1.SearchCluster{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "search", Name: "vectors"}, sc); err != nil {
		t.Fatal(err)
	}
	if want := "https://" + userOpenSearchService + "." + userOpenSearchNamespace + ".svc:9200"; sc.Status.Endpoint != want {
		t.Errorf("status.endpoint %q, want %q", sc.Status.Endpoint, want)
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/instance": "vectorpilot"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Spec.Containers[0].Image != "registry.example.com/vectorpilot:0.1.0" {
		t.Errorf("the release's operator pods: %d, want one running the image the quick start built", len(pods.Items))
	}
}

// quickStartScripts reads the shell blocks of README's "Quick start on a cluster": the first
// (the image), without its registry push, and the others joined.
func quickStartScripts(t *testing.T, readme string) (build, rest string) {
	t.Helper()
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Quick start on a cluster\n")
	if !ok {
		t.Fatal(`README.md has no "## Quick start on a cluster" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for {
		var block string
		if _, section, ok = strings.Cut(section, "```sh\n"); !ok {
			break
		}
		if block, section, ok = strings.Cut(section, "\n```"); !ok {
			t.Fatal("README.md's quick start has a shell block without its closing fence")
		}
		blocks = append(blocks, block+"\n")
	}
	if len(blocks) < 2 {
		t.Fatalf("README.md's quick start has %d shell blocks, want the image's and the rest", len(blocks))
	}
	var kept []string
	pushes := 0
	for line := range strings.Lines(blocks[0]) {
		if strings.HasPrefix(line, "crane push ") {
			pushes++
			continue
		}
		kept = append(kept, line)
	}
	if pushes != 1 {
		t.Fatalf("the quick start's first block has %d `crane push` lines, want the one the test replaces by an import into the node:\n%s", pushes, blocks[0])
	}
	return strings.Join(kept, ""), strings.Join(blocks[1:], "")
}

// replaceOnce replaces the one occurrence of old in script, and fails when the README no
// longer has exactly one.
func replaceOnce(t *testing.T, script, old, replacement string) string {
	t.Helper()
	if n := strings.Count(script, old); n != 1 {
		t.Fatalf("the quick start has %q %d times, want once:\n%s", old, n, script)
	}
	return strings.Replace(script, old, replacement, 1)
}

// userOpenSearch is the OpenSearch a quick-start user already runs: node is its node's own
// URL on this machine, ca the CA its HTTPS endpoint presents.
type userOpenSearch struct {
	node string
	ca   []byte
}

// startUserOpenSearch starts a local node with k-NN, nginx in front of it on the host end
// of the node's link (TLS for the Service's DNS name, the user vectorpilot with password),
// and the Service the official chart would have made, pointing at nginx.
func startUserOpenSearch(t *testing.T, root, password string) userOpenSearch {
	t.Helper()
	ctx := context.Background()
	node, err := devenv.StartNode(root, "e2e-quickstart", devenv.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Destroy() })
	ca, err := pki.NewCA("the user's OpenSearch CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	name := userOpenSearchService + "." + userOpenSearchNamespace + ".svc"
	proxy, err := devenv.StartTLSProxyAt(root, cluster.HostIP, []string{name}, node.URL, map[string]string{"vectorpilot": password}, ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Stop() })

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: userOpenSearchNamespace}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: userOpenSearchService, Namespace: userOpenSearchNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 9200}}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: userOpenSearchService + "-nginx", Namespace: userOpenSearchNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: userOpenSearchService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{cluster.HostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(proxy.Port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, obj := range []client.Object{ns, svc, slice} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { deleteNamespace(t, userOpenSearchNamespace) })
	return userOpenSearch{node: node.URL, ca: ca.CertPEM}
}

// uninstallQuickStart deletes what the quick start made, the operator it installed still
// running to see its objects go, then uninstalls the release and deletes the namespace.
func uninstallQuickStart(t *testing.T) {
	ctx := context.Background()
	for _, obj := range []client.Object{
		&v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Namespace: "search", Name: "products"}},
		&v1alpha1.SearchCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "search", Name: "vectors"}},
	} {
		if err := k8s.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			continue
		}
		waitFor(t, 2*time.Minute, fmt.Sprintf("%T %s gone", obj, obj.GetName()), func() (bool, string) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), fmt.Sprintf("finalizers %v (%v)", obj.GetFinalizers(), err)
		})
	}
	out, err := exec.Command(filepath.Join(testsupport.Root(t), "bin", "helm"), "uninstall", "vectorpilot", "-n", operatorNamespace,
		"--kubeconfig", cluster.Kubeconfig, "--wait", "--timeout", "2m").CombinedOutput()
	if err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
	}
	deleteNamespace(t, "search")
}

// deleteNamespace deletes a namespace and waits until it is gone, so that a later test
// can make it again.
func deleteNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", name, err)
		return
	}
	waitFor(t, 3*time.Minute, "namespace "+name+" gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ns), ns)
		return apierrors.IsNotFound(err), fmt.Sprintf("phase %s, conditions %+v (%v)", ns.Status.Phase, ns.Status.Conditions, err)
	})
}
