// Package kubenode runs a real single-node Kubernetes on this machine for end-to-end tests:
// the control plane envtest starts (kube-apiserver + etcd) with production admission and
// authorization, the real kube-scheduler and kube-controller-manager, and one node —
// containerd + runc + CNI bridge, kubelet, kube-proxy and CoreDNS — living in a network
// namespace the harness makes, so pods, Services and their addresses never leave this
// machine.
//
// Everything a node changes on the host is named after its slot (vpnode-<n>): the network
// namespace and the veth into it, a cgroup subtree holding every process of the node and its
// pods, and a work folder holding every mount. Stop undoes all of it by PID, mount and name,
// and Start first undoes what a crashed run left behind.
package kubenode

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
	"github.com/vectorpilot/vectorpilot/internal/pki"
	"github.com/vectorpilot/vectorpilot/test/harness/images"
)

// NodeName is the name the node registers under.
const NodeName = "vpnode"

// stateRoot records which slots are taken and by which process.
const stateRoot = "/run/vectorpilot-kubenode"

// maxSlots bounds how many nodes may run on one machine at once (one /24 each).
const maxSlots = 200

// Cluster is a running control plane and node.
type Cluster struct {
	ControlPlane *devenv.ControlPlane
	Client       kubernetes.Interface
	// Kubeconfig is an admin kubeconfig file for the cluster.
	Kubeconfig string
	// HostIP is the host's end of the link into the node's namespace (the apiserver listens
	// there); NodeIP is the node's end; PodCIDR holds every pod address and ServiceCIDR every
	// Service's; both are routed from the host through the node.
	HostIP, NodeIP, PodCIDR, ServiceCIDR string

	slot  int
	work  string
	procs []*process
	logs  map[string]string
	// stopVolumes stops the volume provisioner, which runs in this process.
	stopVolumes func()
}

// process is a node process started by the harness; done closes when it has exited.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func names(slot int) (netns, veth, cgroup, work string) {
	return fmt.Sprintf("vpnode-%d", slot), fmt.Sprintf("vpnode%d", slot), fmt.Sprintf("vpnode-%d", slot), fmt.Sprintf("/tmp/vpnode-%d", slot)
}

// Cgroup is the node's cgroup subtree, relative to each hierarchy's root: node/ holds the
// node's own processes, pods/ the kubelet's pods.
func (c *Cluster) Cgroup() string {
	_, _, cgroup, _ := names(c.slot)
	return cgroup
}

// Start brings up the control plane and the node, and waits until the node is Ready.
func Start(root string) (*Cluster, error) {
	CleanLeftovers()
	slot, err := claimSlot()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		slot:    slot,
		HostIP:  fmt.Sprintf("10.88.%d.1", slot),
		NodeIP:  fmt.Sprintf("10.88.%d.2", slot),
		PodCIDR: fmt.Sprintf("10.89.%d.0/24", slot),
		// Per slot, so two nodes on one machine never route the same Service addresses.
		ServiceCIDR: fmt.Sprintf("10.90.%d.0/24", slot),
		logs:        map[string]string{},
	}
	_, _, _, c.work = names(slot)
	if err := c.start(root); err != nil {
		logs := c.tailLogs()
		c.Stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	return c, nil
}

func (c *Cluster) start(root string) error {
	assets, err := devenv.KubeBinaries(root, "node", "hack/install-node.sh", "kubelet", "kube-proxy", "coredns")
	if err != nil {
		return err
	}
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet", "pki", "logs"} {
		if err := os.MkdirAll(filepath.Join(c.work, d), 0o755); err != nil {
			return err
		}
	}
	if err := c.network(); err != nil {
		return fmt.Errorf("node network: %w", err)
	}
	if err := c.cgroups(); err != nil {
		return fmt.Errorf("node cgroups: %w", err)
	}
	kubeletClient, err := c.startControlPlane(root)
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	if err := c.ControlPlane.StartComponents(
		"--controllers=*",
		"--service-account-private-key-file="+filepath.Join(c.ControlPlane.Env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--root-ca-file="+filepath.Join(c.work, "pki", "apiserver-ca.crt"),
		"--use-service-account-credentials=true",
		"--node-monitor-grace-period=40s",
	); err != nil {
		return err
	}
	if err := c.startContainerd(); err != nil {
		return err
	}
	if err := c.startKubelet(assets, kubeletClient); err != nil {
		return err
	}
	if err := c.startKubeProxy(assets); err != nil {
		return err
	}
	if err := c.startCoreDNS(assets); err != nil {
		return err
	}
	if err := c.waitNodeReady(2 * time.Minute); err != nil {
		return err
	}
	if err := c.startVolumes(); err != nil {
		return fmt.Errorf("volume provisioner: %w", err)
	}
	return c.labelCPUFeatures()
}

// labelCPUFeatures labels the node with this machine's vector CPU features the way
// node-feature-discovery does (feature.node.kubernetes.io/cpu-cpuid.<FEATURE>: "true"),
// read from /proc/cpuinfo; NFD itself is not part of the harness.
func (c *Cluster) labelCPUFeatures() error {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return err
	}
	labels := map[string]string{}
	for _, line := range strings.Split(string(info), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		for _, flag := range strings.Fields(value) {
			if feature, ok := nfdFeature(flag); ok {
				labels["feature.node.kubernetes.io/cpu-cpuid."+feature] = "true"
			}
		}
		break
	}
	node, err := c.Client.CoreV1().Nodes().Get(context.Background(), NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for k, v := range labels {
		node.Labels[k] = v
	}
	_, err = c.Client.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
	return err
}

// nfdFeature is NFD's name for a /proc/cpuinfo vector flag (avx512_fp16 → AVX512FP16, fma →
// FMA3); other flags are not labelled.
func nfdFeature(flag string) (string, bool) {
	switch {
	case flag == "fma":
		return "FMA3", true
	case strings.HasPrefix(flag, "avx"), strings.HasPrefix(flag, "amx"):
		return strings.ToUpper(strings.ReplaceAll(flag, "_", "")), true
	}
	return "", false
}

// claimSlot takes the lowest free slot: its state folder is created atomically.
func claimSlot() (int, error) {
	if err := os.MkdirAll(stateRoot, 0o755); err != nil {
		return 0, err
	}
	for slot := 1; slot <= maxSlots; slot++ {
		dir := filepath.Join(stateRoot, strconv.Itoa(slot))
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(processIdentity(os.Getpid())), 0o644); err != nil {
			return 0, err
		}
		return slot, nil
	}
	return 0, errors.New("no free node slot (all of " + strconv.Itoa(maxSlots) + " taken)")
}

// processIdentity is a PID with its start time, so a reused PID is not taken for its owner.
func processIdentity(pid int) string {
	proc, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	stat, err := proc.Stat()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d %d", pid, stat.Starttime)
}

// CleanLeftovers undoes every slot whose owning process is gone (a run that crashed).
func CleanLeftovers() {
	entries, _ := os.ReadDir(stateRoot)
	for _, e := range entries {
		slot, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		owner, _ := os.ReadFile(filepath.Join(stateRoot, e.Name(), "owner"))
		pid, _, _ := strings.Cut(string(owner), " ")
		if n, err := strconv.Atoi(pid); err == nil && processIdentity(n) == string(owner) {
			continue // its owner still runs
		}
		undo(slot)
	}
}

// undo removes everything of slot from the host: processes (by PID, from the slot's
// cgroups), mounts under its work folder, its network namespace (with the veth and the
// route through it), its cgroups, its folders.
func undo(slot int) {
	netns, _, cgroup, work := names(slot)
	killCgroup(cgroup)
	unmountUnder(work)
	_ = exec.Command("ip", "netns", "del", netns).Run()
	removeCgroups(cgroup)
	_ = os.RemoveAll(work)
	_ = os.RemoveAll(filepath.Join(stateRoot, strconv.Itoa(slot)))
}

// Stop stops the node's processes by PID (gracefully, then by cgroup), the control plane,
// and undoes the slot.
func (c *Cluster) Stop() {
	if c.stopVolumes != nil {
		c.stopVolumes()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if c.ControlPlane != nil {
		_ = c.ControlPlane.Stop()
	}
	undo(c.slot)
}

// network makes the node's namespace and the veth into it, routes the pod range through it,
// and turns on forwarding and bridge netfilter inside it (per-namespace settings).
func (c *Cluster) network() error {
	netns, veth, _, _ := names(c.slot)
	steps := [][]string{
		{"ip", "netns", "add", netns},
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"ip", "addr", "add", c.HostIP + "/30", "dev", veth},
		{"ip", "link", "set", veth, "up"},
		{"ip", "-n", netns, "addr", "add", c.NodeIP + "/30", "dev", "eth0"},
		{"ip", "-n", netns, "link", "set", "eth0", "up"},
		{"ip", "-n", netns, "link", "set", "lo", "up"},
		{"ip", "-n", netns, "route", "add", "default", "via", c.HostIP},
		{"ip", "route", "add", c.PodCIDR, "via", c.NodeIP, "dev", veth},
		{"ip", "route", "add", c.ServiceCIDR, "via", c.NodeIP, "dev", veth},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	for key, value := range map[string]string{
		"net/ipv4/ip_forward":                 "1",
		"net/bridge/bridge-nf-call-iptables":  "1",
		"net/bridge/bridge-nf-call-ip6tables": "1",
	} {
		cmd := exec.Command("nsenter", "--net=/run/netns/"+netns, "sh", "-c", fmt.Sprintf("echo %s > /proc/sys/%s", value, key))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("setting %s in %s: %w: %s", key, netns, err, out)
		}
	}
	return nil
}

// cgroupHierarchies are the mounted cgroup hierarchies: v1 (the kubelet runs them with
// cgroupfs) and the unified one runc also writes to.
func cgroupHierarchies() []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && (fields[2] == "cgroup" || fields[2] == "cgroup2") {
			out = append(out, fields[1])
		}
	}
	return out
}

// cgroups creates the slot's subtree in every hierarchy: node/ holds the node's own
// processes, pods/ is the kubelet's cgroup root. The subtree weighs, in CPU, what kubelet
// gives kubepods on a real node, the machine's cores in shares (1024 each), beside the
// host's processes (hack/test.sh runs the tests in a slice of 1024, as systemd's slices
// are): left at the default 1024 among the host's processes, the whole node weighed as much
// as one busy thread of a test beside it, and its pods starved.
func (c *Cluster) cgroups() error {
	_, _, cgroup, _ := names(c.slot)
	for _, h := range cgroupHierarchies() {
		for _, sub := range []string{"node", "pods"} {
			if err := os.MkdirAll(filepath.Join(h, cgroup, sub), 0o755); err != nil {
				return err
			}
		}
		if shares := filepath.Join(h, cgroup, "cpu.shares"); fileExists(shares) {
			if err := os.WriteFile(shares, []byte(strconv.Itoa(runtime.NumCPU()*1024)), 0o644); err != nil {
				return err
			}
		}
		// cpuset children start with no CPUs or memory nodes; give them the parent's.
		if filepath.Base(h) == "cpuset" {
			for _, dir := range []string{filepath.Join(h, cgroup), filepath.Join(h, cgroup, "node"), filepath.Join(h, cgroup, "pods")} {
				for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
					parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// killCgroup kills every process in the slot's pids subtree until none is left.
func killCgroup(cgroup string) {
	for attempt := 0; attempt < 50; attempt++ {
		pids := cgroupPIDs(cgroup)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func cgroupPIDs(cgroup string) []int {
	var pids []int
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, cgroup), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the slot's subtree, deepest folders first.
func removeCgroups(cgroup string) {
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, cgroup), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			_ = syscall.Rmdir(d)
		}
	}
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	for attempt := 0; attempt < 3; attempt++ {
		data, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return
		}
		var points []string
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) > 4 {
				p := unescapeMount(fields[4])
				if p == dir || strings.HasPrefix(p, dir+"/") {
					points = append(points, p)
				}
			}
		}
		if len(points) == 0 {
			return
		}
		sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
		for _, p := range points {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// startControlPlane starts kube-apiserver (listening on the host's end of the link, where
// pods reach it) with the admission plugins and authorizers of a production cluster, and
// returns the kubelet's client credentials.
func (c *Cluster) startControlPlane(root string) (kubeletCA []byte, err error) {
	ca, err := pki.NewCA("vectorpilot-kubenode-kubelet-client", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	// The apiserver's client certificate towards kubelets (logs, exec); kubelets trust ca.
	client, err := ca.Issue("kube-apiserver-kubelet-client", nil, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certFile, keyFile := filepath.Join(c.work, "pki", "kubelet-client.crt"), filepath.Join(c.work, "pki", "kubelet-client.key")
	if err := os.WriteFile(certFile, client.CertPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, client.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	port, err := devenv.FreePort(c.HostIP)
	if err != nil {
		return nil, err
	}
	certDir, servingCA, err := c.apiserverCerts()
	if err != nil {
		return nil, err
	}
	c.ControlPlane, err = devenv.StartControlPlaneWith(root, func(env *envtest.Environment) {
		api := env.ControlPlane.GetAPIServer()
		api.Port, api.Address = strconv.Itoa(port), c.HostIP
		// envtest keeps certificates it finds in CertDir.
		api.CertDir, api.CA = certDir, servingCA
		args := api.Configure()
		args.Set("advertise-address", c.HostIP)
		args.Set("service-cluster-ip-range", c.ServiceCIDR)
		args.Disable("disable-admission-plugins")
		args.Set("enable-admission-plugins", "NodeRestriction,OwnerReferencesPermissionEnforcement,PodSecurity,ServiceAccount")
		args.Set("authorization-mode", "Node,RBAC")
		args.Set("kubelet-preferred-address-types", "InternalIP")
		args.Set("kubelet-client-certificate", certFile)
		args.Set("kubelet-client-key", keyFile)
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.work, "pki", "apiserver-ca.crt"), c.ControlPlane.Env.ControlPlane.APIServer.CA, 0o644); err != nil {
		return nil, err
	}
	admin, err := c.ControlPlane.AdminKubeconfig()
	if err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(c.work, "admin.kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, admin, 0o600); err != nil {
		return nil, err
	}
	if c.Client, err = kubernetes.NewForConfig(c.ControlPlane.Config); err != nil {
		return nil, err
	}
	// kubelets let the apiserver's client certificate in (logs, exec, port-forward).
	_, err = c.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "vectorpilot-kubenode:apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "kube-apiserver-kubelet-client"}},
	}, metav1.CreateOptions{})
	return ca.CertPEM, err
}

// apiserverCerts writes the apiserver's serving certificate — valid for the names and
// addresses pods use (the kubernetes Service's ClusterIP and DNS names), which envtest's own
// does not cover — and its service-account signing key, where envtest looks for them.
func (c *Cluster) apiserverCerts() (dir string, caPEM []byte, err error) {
	dir = filepath.Join(c.work, "pki", "apiserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	ca, err := pki.NewCA("vectorpilot-kubenode-apiserver", 24*time.Hour)
	if err != nil {
		return "", nil, err
	}
	_, svcNet, err := net.ParseCIDR(c.ServiceCIDR)
	if err != nil {
		return "", nil, err
	}
	kubernetesIP := svcNet.IP.To4()
	kubernetesIP[3]++ // the first Service address is the kubernetes Service's
	serving, err := ca.Issue("kube-apiserver", []string{"localhost", "127.0.0.1", c.HostIP, kubernetesIP.String(),
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}, 24*time.Hour)
	if err != nil {
		return "", nil, err
	}
	signer, err := pki.NewCA("vectorpilot-kubenode-service-accounts", 24*time.Hour)
	if err != nil {
		return "", nil, err
	}
	signerKey, err := x509.MarshalPKCS8PrivateKey(signer.Key)
	if err != nil {
		return "", nil, err
	}
	for name, data := range map[string][]byte{
		"apiserver.crt": serving.CertPEM,
		"apiserver.key": serving.KeyPEM,
		"sa-signer.crt": signer.CertPEM,
		"sa-signer.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: signerKey}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", nil, err
		}
	}
	return dir, ca.CertPEM, nil
}

// run starts a node process inside the node's network namespace and its node cgroup, with
// its output in logs/<name>.log.
func (c *Cluster) run(name string, argv ...string) error {
	netns, _, cgroup, _ := names(c.slot)
	logPath := filepath.Join(c.work, "logs", name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	var join strings.Builder
	for _, h := range cgroupHierarchies() {
		fmt.Fprintf(&join, "echo $$ > %s/%s/node/cgroup.procs; ", h, cgroup)
	}
	script := join.String() + `exec nsenter --net=/run/netns/` + netns + ` -- "$@"`
	cmd := exec.Command("sh", append([]string{"-c", script, name}, argv...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	// If the test binary dies without its clean-up, the kernel stops the process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	c.logs[name] = logPath
	return nil
}

// Log is the output of a node process (containerd, kubelet, kube-proxy, coredns) or of
// the volume provisioner.
func (c *Cluster) Log(name string) string {
	data, _ := os.ReadFile(c.logs[name])
	return string(data)
}

// LogTail is the last lines of a node process's output.
func (c *Cluster) LogTail(name string, lines int) string {
	all := strings.Split(strings.TrimSpace(c.Log(name)), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

func (c *Cluster) tailLogs() string {
	var b strings.Builder
	for name := range c.logs {
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", name, c.LogTail(name, 15))
	}
	return b.String()
}

// ContainerdSocket is the node's containerd endpoint.
func (c *Cluster) ContainerdSocket() string {
	return filepath.Join(c.work, "containerd", "containerd.sock")
}

func (c *Cluster) startContainerd() error {
	dir := filepath.Join(c.work, "containerd")
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # Root here may not lower oom_score_adj (no CAP_SYS_RESOURCE): without this every
  # sandbox fails to start.
  restrict_oom_score_adj = true
  # Pod network namespaces are mounted under state, so clean-up finds them.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[6]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.ContainerdSocket(), images.PauseRef,
		filepath.Join(c.work, "cni", "net.d"), filepath.Join(dir, "opt"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
		return err
	}
	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "vectorpilot",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}`, c.PodCIDR, filepath.Join(c.work, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(c.work, "cni", "net.d", "10-vectorpilot.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	if err := c.run("containerd", "containerd", "--config", filepath.Join(dir, "config.toml")); err != nil {
		return err
	}
	return waitFor(30*time.Second, "containerd's socket", func() bool {
		_, err := os.Stat(c.ContainerdSocket())
		return err == nil
	})
}

// ImportImage imports a docker-archive tarball into the node's containerd (namespace k8s.io,
// where the kubelet's images live).
func (c *Cluster) ImportImage(archive string) error {
	out, err := exec.Command("ctr", "--address", c.ContainerdSocket(), "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, out)
	}
	return nil
}

// SecretVolumeDir is where the kubelet has mounted a pod's Secret volume on this host: what
// the pod's containers see, read without entering the pod.
func (c *Cluster) SecretVolumeDir(podUID, volume string) string {
	return filepath.Join(c.work, "kubelet", "root", "pods", podUID, "volumes", "kubernetes.io~secret", volume)
}

func (c *Cluster) startKubelet(assets string, clientCA []byte) error {
	dir := filepath.Join(c.work, "kubelet")
	user, err := c.ControlPlane.Env.AddUser(envtest.User{Name: "system:node:" + NodeName, Groups: []string{"system:nodes"}}, c.ControlPlane.Config)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	_, _, cgroup, _ := names(c.slot)
	files := map[string][]byte{
		"kubeconfig":    kubeconfig,
		"client-ca.crt": clientCA,
		// Pods resolve through the cluster DNS only: nothing is looked up beyond this machine.
		"resolv.conf": nil,
		"config.yaml": fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
cgroupDriver: cgroupfs
cgroupRoot: /%[2]s/pods
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%[3]s
clusterDNS: [%[1]s]
clusterDomain: cluster.local
resolvConf: %[4]s
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[5]s}
authorization:
  mode: Webhook
serializeImagePulls: false
`, c.NodeIP, cgroup, c.ContainerdSocket(), filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "client-ca.crt")),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return c.run("kubelet", filepath.Join(assets, "kubelet"),
		"--config="+filepath.Join(dir, "config.yaml"),
		"--kubeconfig="+filepath.Join(dir, "kubeconfig"),
		"--root-dir="+filepath.Join(dir, "root"),
		"--node-ip="+c.NodeIP,
		"--hostname-override="+NodeName,
		"--v=1")
}

func (c *Cluster) startKubeProxy(assets string) error {
	dir := filepath.Join(c.work, "kube-proxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	user, err := c.ControlPlane.Env.AddUser(envtest.User{Name: "system:kube-proxy"}, c.ControlPlane.Config)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), kubeconfig, 0o600); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clientConnection:
  kubeconfig: %s
# Leave conntrack limits and timeouts as the machine has them.
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.PodCIDR, NodeName, c.NodeIP, filepath.Join(dir, "kubeconfig"))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	return c.run("kube-proxy", filepath.Join(assets, "kube-proxy"), "--config="+filepath.Join(dir, "config.yaml"))
}

func (c *Cluster) startCoreDNS(assets string) error {
	dir := filepath.Join(c.work, "coredns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	corefile := fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`, c.NodeIP, c.Kubeconfig)
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile), 0o644); err != nil {
		return err
	}
	return c.run("coredns", filepath.Join(assets, "coredns"), "-conf", filepath.Join(dir, "Corefile"))
}

// waitNodeReady waits for the kubelet to register the node and report it Ready.
func (c *Cluster) waitNodeReady(timeout time.Duration) error {
	return waitFor(timeout, "node "+NodeName+" Ready", func() bool {

		node, err := c.Client.CoreV1().Nodes().Get(context.Background(), NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func waitFor(timeout time.Duration, what string, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
