package managed

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
)

// TestKeystorePod: an init container builds the keystore from every Secret into an
// emptyDir that OpenSearch reads as config/opensearch.keystore; no value is in the spec.
func TestKeystorePod(t *testing.T) {
	sc := remoteBacked()
	pool, err := BuildPool(sc, sc.Spec.Managed.NodePools[1], Live{})
	if err != nil {
		t.Fatal(err)
	}
	pod := pool.StatefulSet.Spec.Template.Spec
	var init *corev1.Container
	for i := range pod.InitContainers {
		if pod.InitContainers[i].Name == keystoreInitName {
			init = &pod.InitContainers[i]
		}
	}
	if init == nil {
		t.Fatalf("no %s init container in %v", keystoreInitName, pod.InitContainers)
	}
	secrets := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	mounted := map[string]bool{}
	for _, m := range init.VolumeMounts {
		if name := secrets[m.Name]; name != "" && m.MountPath == keystoreSecrets+"/"+name && m.ReadOnly {
			mounted[name] = true
		}
	}
	if !mounted["s3-credentials"] || !mounted["more"] {
		t.Errorf("init container mounts %v of volumes %v, want both Secrets read-only under %s", init.VolumeMounts, pod.Volumes, keystoreSecrets)
	}
	found := false
	for _, m := range pod.Containers[0].VolumeMounts {
		found = found || (m.Name == keystoreVolume && m.SubPath == keystoreFile && m.MountPath == homeDir+"/config/"+keystoreFile && m.ReadOnly)
	}
	if !found {
		t.Errorf("OpenSearch does not read the keystore: mounts %v", pod.Containers[0].VolumeMounts)
	}
	for _, e := range init.Env {
		if e.Name == "OPENSEARCH_JAVA_OPTS" {
			t.Error("the keystore tool would start with the node's heap")
		}
	}
	plain, err := BuildPool(sample(), sample().Spec.Managed.NodePools[1], Live{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plain.StatefulSet.Spec.Template.Spec.InitContainers {
		if c.Name == keystoreInitName {
			t.Error("a cluster without keystore Secrets gets a keystore init container")
		}
	}
}

// TestKeystoreScriptBuildsAKeystore runs the init container's script with the keystore CLI
// of the test image (OpenSearch's KeyStoreWrapper; the official CLI is not published on
// Maven Central, so this proves the script, not the official tool): every key of every Secret folder
// ends up in the keystore it leaves behind, Kubernetes' ..data links skipped.
func TestKeystoreScriptBuildsAKeystore(t *testing.T) {
	testgate.Integration(t, "OpenSearch assembled from Maven and a JVM")
	root, err := filepath.Abs(filepath.Join("..", "..")) // the repository: tests run in their package folder
	if err != nil {
		t.Fatal(err)
	}
	home, err := exec.Command("bash", filepath.Join(root, "hack", "install-opensearch.sh")).Output()
	if err != nil {
		t.Fatalf("hack/install-opensearch.sh: %v", err)
	}
	javaHome, err := exec.Command("bash", filepath.Join(root, "hack", "opensearch.sh"), "java-home").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The Maven-assembled home has no keystore CLI: a home of its lib/ with the CLI the
	// test image carries (hack/opensearch/opensearch-keystore).
	tmp := t.TempDir()
	homeDir := filepath.Join(tmp, "home")
	if err := os.MkdirAll(filepath.Join(homeDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(strings.TrimSpace(string(home)), "lib"), filepath.Join(homeDir, "lib")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"opensearch-keystore", "Keystore.java"} {
		if err := os.Symlink(filepath.Join(root, "hack", "opensearch", f), filepath.Join(homeDir, "bin", f)); err != nil {
			t.Fatal(err)
		}
	}
	secrets, out, conf := filepath.Join(tmp, "secrets"), filepath.Join(tmp, "keystore"), filepath.Join(tmp, "config")
	for dir, files := range map[string]map[string]string{
		"s3-credentials": {"s3.client.default.access_key": "AKIA", "s3.client.default.secret_key": "s3cr3t"},
		"more":           {"s3.client.backup.access_key": "B"},
	} {
		// As a Secret volume lays keys out: files behind a ..data link.
		data := filepath.Join(secrets, dir, "..2026_11_23")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("..2026_11_23", filepath.Join(secrets, dir, "..data")); err != nil {
			t.Fatal(err)
		}
		for k, v := range files {
			if err := os.WriteFile(filepath.Join(data, k), []byte(v), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..data", k), filepath.Join(secrets, dir, k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{out, conf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc := remoteBacked()
	_, init := keystorePod(sc, "image", &corev1.Container{})
	script := strings.NewReplacer(keystoreSecrets, secrets, keystoreDir, out).Replace(init.Command[2])
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = homeDir
	java := "OPENSEARCH_JAVA_HOME=" + strings.TrimSpace(string(javaHome))
	cmd.Env = append(os.Environ(), "OPENSEARCH_PATH_CONF="+conf, java)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the init script failed: %v\n%s", err, b)
	}
	list := exec.Command("bin/opensearch-keystore", "list")
	list.Dir, list.Env = cmd.Dir, append(os.Environ(), "OPENSEARCH_PATH_CONF="+out, java)
	b, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("listing the keystore the script left: %v\n%s", err, b)
	}
	keys := strings.Fields(string(b))
	for _, k := range []string{"s3.client.default.access_key", "s3.client.default.secret_key", "s3.client.backup.access_key"} {
		if !slices.Contains(keys, k) {
			t.Errorf("keystore %v lacks %s", keys, k)
		}
	}
}
