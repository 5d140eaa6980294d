// Package devenv starts the real parts of the embedded local default: a kube-apiserver
// with etcd (through controller-runtime's envtest) and OpenSearch nodes with k-NN on
// 127.0.0.1 (through hack/opensearch.sh). The demo, `vectorpilot-dev` and the integration
// tests all use it, so they run the same parts the same way.
package devenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DefaultKubeVersion is the version of the control-plane binaries hack/install-kube.sh
// builds; it matches the k8s.io client libraries in go.mod.
const DefaultKubeVersion = "v1.37.0"

// OutsideWorkspace is this process's environment with the go command's workspace off, for
// a command that builds or loads a module as that module builds itself — the Dockerfile's
// build, controller-gen over a module — not in the tests' workspace (hack/test.sh), which
// raises a dependency module to the workspace's versions and holds no other tree.
func OutsideWorkspace() []string {
	return append(os.Environ(), "GOWORK=off")
}

// RepoRoot finds the repository root: the nearest folder above the working directory that
// holds hack/opensearch.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "opensearch.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the vectorpilot repository (no hack/opensearch.sh above the working directory)")
		}
		dir = parent
	}
}

// KubeAssets is the folder with etcd and kube-apiserver, or an error that says how to get them.
func KubeAssets(root string) (string, error) {
	return KubeBinaries(root, "control plane", "hack/install-kube.sh", "etcd", "kube-apiserver")
}

// KubeBinaries is the folder of the pinned Kubernetes version's binaries (bin/k8s/<version>)
// once every one of names is there, or an error naming the missing part and its installer.
func KubeBinaries(root, part, installer string, names ...string) (string, error) {
	version := os.Getenv("KUBE_VERSION")
	if version == "" {
		version = DefaultKubeVersion
	}
	dir := filepath.Join(root, "bin", "k8s", version)
	for _, b := range names {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("real %s missing: %s not found in %s; run %s (make test does)", part, b, dir, installer)
		}
	}
	return dir, nil
}

// ControlPlane is a running kube-apiserver + etcd with the project's CRDs installed, and
// optionally a kube-scheduler and kube-controller-manager.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
	assets string
	// components are the scheduler and controller-manager processes, stopped by PID.
	components []*exec.Cmd
	workDir    string
}

// StartControlPlane starts etcd and kube-apiserver from bin/ and installs the CRDs of
// config/crd/bases.
func StartControlPlane(root string) (*ControlPlane, error) {
	return StartControlPlaneWith(root, nil)
}

// crdWait is how long CRDs may take to be served. envtest's default, 10 s, ran out for
// Argo's full Workflow CRDs on two cores busy with a build beside the tests.
const crdWait = 2 * time.Minute

// StartControlPlaneWith is StartControlPlane with configure called on the environment
// before anything starts (listen address, apiserver flags).
func StartControlPlaneWith(root string, configure func(*envtest.Environment)) (*ControlPlane, error) {
	assets, err := KubeAssets(root)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     envtest.CRDInstallOptions{MaxTime: crdWait},
	}
	if configure != nil {
		configure(env)
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may fail after etcd and the apiserver are up (a CRD the apiserver refuses):
		// stop what did start rather than leave it running.
		_ = env.Stop()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return &ControlPlane{Env: env, Config: cfg, assets: assets}, nil
}

// StartScheduling starts the real kube-scheduler and a kube-controller-manager running the
// StatefulSet controller against the control plane, so StatefulSets get pods and pods get
// nodes. There is no kubelet: Node objects are registered by the caller, and pods stay
// unready until someone marks them. Logs go to <workDir>/<component>.log.
func (c *ControlPlane) StartScheduling() error {
	return c.StartComponents("--controllers=statefulset-controller,garbage-collector-controller")
}

// StartComponents starts the real kube-scheduler and a kube-controller-manager with
// controllerManagerArgs added to its own.
func (c *ControlPlane) StartComponents(controllerManagerArgs ...string) error {
	kubeconfig, err := c.AdminKubeconfig()
	if err != nil {
		return err
	}
	if c.workDir, err = os.MkdirTemp("", "vectorpilot-kube-*"); err != nil {
		return err
	}
	path := filepath.Join(c.workDir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	for _, comp := range []struct {
		name string
		args []string
	}{
		{"kube-scheduler", []string{"--kubeconfig=" + path, "--authentication-kubeconfig=" + path, "--authorization-kubeconfig=" + path,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0"}},
		{"kube-controller-manager", append([]string{"--kubeconfig=" + path, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0"},
			controllerManagerArgs...)},
	} {
		logFile, err := os.Create(filepath.Join(c.workDir, comp.name+".log"))
		if err != nil {
			return err
		}
		cmd := exec.Command(filepath.Join(c.assets, comp.name), comp.args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		// If the test binary dies without its clean-up, the kernel stops the component.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			logFile.Close()
			return fmt.Errorf("starting %s: %w", comp.name, err)
		}
		logFile.Close()
		c.components = append(c.components, cmd)
	}
	return nil
}

// InstallArgoCRDs installs Argo Workflows' Workflow and WorkflowTemplate CRDs from the
// argo-workflows Go module the project pins, so the operator can create Workflows without
// an Argo controller (tests play it by writing Workflow status).
func (c *ControlPlane) InstallArgoCRDs() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-workflows/v3").Output()
	if err != nil {
		return fmt.Errorf("locating the argo-workflows module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "manifests", "base", "crds", "full")
	_, err = envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{MaxTime: crdWait, Paths: []string{
		filepath.Join(dir, "argoproj.io_workflows.yaml"),
		filepath.Join(dir, "argoproj.io_workflowtemplates.yaml"),
	}})
	return err
}

// Log is the log of a component StartScheduling started.
func (c *ControlPlane) Log(component string) string {
	out, _ := os.ReadFile(filepath.Join(c.workDir, component+".log"))
	return string(out)
}

// AdminKubeconfig is a kubeconfig for a cluster-admin user of the control plane.
func (c *ControlPlane) AdminKubeconfig() ([]byte, error) {
	user, err := c.Env.AddUser(envtest.User{Name: "vectorpilot-admin", Groups: []string{"system:masters"}}, c.Config)
	if err != nil {
		return nil, err
	}
	return user.KubeConfig()
}

// Stop stops the scheduler and controller-manager by PID, then the apiserver and etcd.
func (c *ControlPlane) Stop() error {
	for _, cmd := range c.components {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	if c.workDir != "" {
		os.RemoveAll(c.workDir)
	}
	return c.Env.Stop()
}

// Node is a local OpenSearch node with k-NN, run by hack/opensearch.sh.
type Node struct {
	Root string
	Name string
	URL  string
	PID  string
	// SIMD says whether Lucene's Panama vector code is on, as read from the node's log.
	SIMD    string
	Version string
}

// NodeOptions configure a node beyond the defaults.
type NodeOptions struct {
	// ExtraConfig are YAML lines appended to opensearch.yml.
	ExtraConfig string
	// Keystore are secure settings (e.g. s3.client.default.access_key).
	Keystore map[string]string
	// AnyHealth: the start waits only for an HTTP answer, not for health yellow (a node
	// whose indexes are red until something restores them).
	AnyHealth bool
	// Version is the OpenSearch version to run (an assembled home of `make real-parts`:
	// hack/versions.env's OPENSEARCH_VERSION when empty, its upgrade's start, or
	// PreviousMajorVersion). Stopped and started again at a newer version, a node
	// upgrades its data in place.
	Version string
	// Cluster names the nodes that form one cluster with this one (this one among them; the
	// first bootstraps it). Empty: the node is a cluster of its own.
	Cluster []string
}

// PreviousMajorVersion is the OpenSearch release of the previous major a node can run
// here (hack/versions.env OPENSEARCH_PREVIOUS_MAJOR_VERSION).
const PreviousMajorVersion = "2.19.1"

// S3ClientConfig is the opensearch.yml of a node whose default S3 client talks to a local
// S3-compatible server.
func S3ClientConfig(s3URL string) string {
	return fmt.Sprintf("s3.client.default.endpoint: %s\ns3.client.default.protocol: http\ns3.client.default.path_style_access: true\ns3.client.default.region: us-east-1\n",
		strings.TrimPrefix(s3URL, "http://"))
}

// StartNode starts (or restarts, keeping its data) the node called name.
func StartNode(root, name string, opts NodeOptions) (*Node, error) {
	env := os.Environ()
	for envVar, content := range map[string]string{"OPENSEARCH_EXTRA_CONFIG": opts.ExtraConfig, "OPENSEARCH_KEYSTORE": keystoreLines(opts.Keystore)} {
		if content == "" {
			continue
		}
		f, err := os.CreateTemp("", "opensearch-*.conf")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		if _, err := f.WriteString(content); err != nil {
			return nil, err
		}
		f.Close()
		env = append(env, envVar+"="+f.Name())
	}
	if opts.AnyHealth {
		env = append(env, "OPENSEARCH_WAIT_FOR=http")
	}
	if opts.Version != "" {
		env = append(env, "OPENSEARCH_VERSION="+opts.Version)
	}
	if len(opts.Cluster) > 0 {
		env = append(env, "OPENSEARCH_CLUSTER="+strings.Join(opts.Cluster, " "))
	}
	out, err := script(root, env, "start", name)
	if err != nil {
		return nil, err
	}
	kv := keyValues(out)
	n := &Node{Root: root, Name: name, URL: kv["url"], PID: kv["pid"], SIMD: kv["simd"], Version: kv["version"]}
	if n.URL == "" {
		return nil, fmt.Errorf("hack/opensearch.sh start %s printed no url:\n%s", name, out)
	}
	return n, nil
}

func keystoreLines(kv map[string]string) string {
	var b strings.Builder
	for k, v := range kv {
		b.WriteString(k + "=" + v + "\n")
	}
	return b.String()
}

// Stop stops the node by its PID and keeps its data.
func (n *Node) Stop() error {
	_, err := script(n.Root, os.Environ(), "stop", n.Name)
	return err
}

// Destroy stops the node and removes its data.
func (n *Node) Destroy() error {
	_, err := script(n.Root, os.Environ(), "destroy", n.Name)
	return err
}

// S3Server is a local S3-compatible server (moto), run by hack/s3.sh.
type S3Server struct {
	Root, Name, URL string
}

// StartS3 starts the S3 server called name on a free loopback port.
func StartS3(root, name string) (*S3Server, error) { return StartS3At(root, name, "127.0.0.1") }

// StartS3At starts the S3 server called name on a free port of host, an address of this
// machine (the host end of the test node's link, for pods).
func StartS3At(root, name, host string) (*S3Server, error) {
	out, err := runScript(root, "s3.sh", append(os.Environ(), "S3_HOST="+host), "start", name)
	if err != nil {
		return nil, err
	}
	s := &S3Server{Root: root, Name: name, URL: keyValues(out)["url"]}
	if s.URL == "" {
		return nil, fmt.Errorf("hack/s3.sh start %s printed no url:\n%s", name, out)
	}
	return s, nil
}

// Stop stops the server by its PID; its data is gone with it.
func (s *S3Server) Stop() error {
	_, err := runScript(s.Root, "s3.sh", os.Environ(), "stop", s.Name)
	return err
}

// keyValues reads the key=value lines the hack scripts print.
func keyValues(out []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// JavaHome is the JDK hack/opensearch.sh runs nodes of an OpenSearch version with
// (OPENSEARCH_JAVA_HOME, else a JDK under /usr/lib/jvm the version's major runs on).
func JavaHome(root, version string) (string, error) {
	out, err := script(root, append(os.Environ(), "OPENSEARCH_VERSION="+version), "java-home")
	return strings.TrimSpace(string(out)), err
}

func script(root string, env []string, args ...string) ([]byte, error) {
	return runScript(root, "opensearch.sh", env, args...)
}

func runScript(root, name string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "hack", name)}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("hack/%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
