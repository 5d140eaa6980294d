package kubenode_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/internal/devenv"
	"github.com/vectorpilot/vectorpilot/internal/images"
	"github.com/vectorpilot/vectorpilot/internal/kubenode"
)

// TestAPodRunsOnTheRealNode starts the node, imports the pause image and runs a pod of it
// under the restricted Pod Security level: it gets an address from the pod range and runs.
func TestAPodRunsOnTheRealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the real node")
	}
	root, err := devenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubenode.Start(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	pause, err := images.Archive(root, "pause", []string{filepath.Join(root, "hack", "images", "pause.c")}, nil,
		func(work string) (images.Image, error) { return images.Pause(root, work) })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ImportImage(pause); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "smoke"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "pause", Image: images.PauseRef, ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					RunAsNonRoot:             ptr.To(true),
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
	// The default ServiceAccount comes from the controller-manager shortly after the namespace.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = c.Client.CoreV1().Pods("smoke").Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, podNet, _ := net.ParseCIDR(c.PodCIDR)
	deadline = time.Now().Add(2 * time.Minute)
	for {
		got, err := c.Client.CoreV1().Pods("smoke").Get(ctx, "pause", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodRunning {
			if ip := net.ParseIP(got.Status.PodIP); ip == nil || !podNet.Contains(ip) {
				t.Fatalf("pod IP %q is not in the pod range %s", got.Status.PodIP, c.PodCIDR)
			}
			t.Logf("pod running at %s on %s", got.Status.PodIP, got.Spec.NodeName)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not running after 2m: %+v\nkubelet:\n%s", got.Status, c.LogTail("kubelet", 30))
		}
		time.Sleep(time.Second)
	}
}
