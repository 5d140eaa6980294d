package kubenode_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
	"github.com/vectorpilot/vectorpilot/test/harness/kubenode"
)

// TestAPodRunsOnTheRealNode starts the node, imports the pause image and runs a pod of it
// under the restricted Pod Security level with a claim of the default StorageClass: the
// claim is provisioned once the pod is scheduled, the pod gets an address from the pod range
// and runs with the volume mounted; deleting the claim deletes the volume and its directory.
func TestAPodRunsOnTheRealNode(t *testing.T) {
	testgate.Integration(t, "the real node")
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
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "smoke"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims("smoke").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "smoke"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			Containers: []corev1.Container{{
				Name: "pause", Image: images.PauseRef, ImagePullPolicy: corev1.PullNever,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
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
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not running after 2m: %+v\nkubelet:\n%s", got.Status, c.LogTail("kubelet", 30))
		}
		time.Sleep(time.Second)
	}
	claim, err = c.Client.CoreV1().PersistentVolumeClaims("smoke").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != kubenode.StorageClassName {
		t.Fatalf("claim %s, class %v; want Bound in the default class %s", claim.Status.Phase, claim.Spec.StorageClassName, kubenode.StorageClassName)
	}
	pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pv.Spec.Local.Path); err != nil {
		t.Fatalf("volume %s: %v", pv.Name, err)
	}
	t.Logf("claim bound to %s at %s", pv.Name, pv.Spec.Local.Path)

	if err := c.Client.CoreV1().Pods("smoke").Delete(ctx, "pause", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().PersistentVolumeClaims("smoke").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		_, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		_, statErr := os.Stat(pv.Spec.Local.Path)
		if apierrors.IsNotFound(err) && os.IsNotExist(statErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume %s not deleted a minute after its claim (get: %v, directory: %v)\nprovisioner:\n%s", pv.Name, err, statErr, c.LogTail("provisioner", 20))
		}
		time.Sleep(time.Second)
	}
}
