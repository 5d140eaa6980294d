package managed

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// The users the operator creates in a secured cluster's internal user database.
const (
	AdminUser    = "admin"
	OperatorUser = "vectorpilot"
	// ProbeUser may read cluster health only: the pods' readiness probe logs in as it.
	ProbeUser = "vectorpilot-probe"
)

// Where a secured node finds its material, relative to the config folder (the security
// plugin resolves relative paths there).
const (
	certsDir          = "certs"
	securityConfigDir = "opensearch-security"
	// TrustBundleKey is the key of the trusted CA certificates in a pool's certificates
	// Secret and in the cluster's CA bundle ConfigMap.
	TrustBundleKey = "ca.crt"
	// SecurityPluginCheck is the init container that refuses to start a secured node whose
	// image lacks the security plugin; its termination message says so.
	SecurityPluginCheck = "check-security-plugin"
	securityPluginDir   = homeDir + "/plugins/opensearch-security"
)

// Pod template annotations of a secured cluster: a change of either restarts the pool
// (the nodes read their certificates and trusted CAs at start-up).
const (
	TrustAnnotation        = "vectorpilot.io/trust-bundle"
	CertificatesAnnotation = "vectorpilot.io/certificates-issued"
)

// CASecretName is the Secret holding the cluster's CA state: the signing CA (with its key
// when the operator owns it), a CA being introduced and one being retired.
func CASecretName(sc *v1alpha1.SearchCluster) string { return sc.Name + "-ca" }

// CABundleName is the ConfigMap with the CA certificates clients of the cluster trust.
func CABundleName(sc *v1alpha1.SearchCluster) string { return sc.Name + "-ca-bundle" }

// CertsSecretName is a pool's Secret with each node's transport and HTTP certificate.
func CertsSecretName(sc *v1alpha1.SearchCluster, pool string) string {
	return PoolName(sc, pool) + "-certs"
}

// AdminCertSecretName is the Secret with the admin client certificate (securityadmin.sh).
func AdminCertSecretName(sc *v1alpha1.SearchCluster) string { return sc.Name + "-admin-cert" }

// CredentialsSecretName is the basic-auth Secret of one of the cluster's users.
func CredentialsSecretName(sc *v1alpha1.SearchCluster, user string) string {
	return sc.Name + "-" + user + "-credentials"
}

// SecurityConfigSecretName is the Secret with the security plugin's configuration files,
// which initialise the security index on the cluster's first start.
func SecurityConfigSecretName(sc *v1alpha1.SearchCluster) string {
	return sc.Name + "-security-config"
}

// TransportKey names a node's transport certificate in its pool's Secret; ".crt" and
// ".key" are appended.
func TransportKey(pod string) string { return pod + ".transport" }

// HTTPKey names a node's HTTP certificate in its pool's Secret, as TransportKey does.
func HTTPKey(pod string) string { return pod + ".http" }

// nodesOU is the organisational unit of every node certificate of a cluster: nodes_dn
// admits exactly the certificates with it, so another cluster's nodes (same CA or not) are
// not taken for this cluster's.
func nodesOU(sc *v1alpha1.SearchCluster) string {
	return fmt.Sprintf("nodes.%s.%s", sc.Name, sc.Namespace)
}

// NodeSubject is the common name and organisational unit of a node's certificates.
func NodeSubject(sc *v1alpha1.SearchCluster, pod string) (cn, ou string) { return pod, nodesOU(sc) }

// AdminSubject is the subject of the admin client certificate.
func AdminSubject(sc *v1alpha1.SearchCluster) (cn, ou string) {
	return AdminUser, fmt.Sprintf("admin.%s.%s", sc.Name, sc.Namespace)
}

// dn is a subject as the security plugin prints it (RFC 2253: most specific first).
func dn(cn, ou string) string { return fmt.Sprintf("CN=%s,OU=%s,O=vectorpilot", cn, ou) }

// NodesDN is plugins.security.nodes_dn: any node certificate of this cluster.
func NodesDN(sc *v1alpha1.SearchCluster) string { return dn("*", nodesOU(sc)) }

// AdminDN is plugins.security.authcz.admin_dn.
func AdminDN(sc *v1alpha1.SearchCluster) string { return dn(AdminSubject(sc)) }

// TransportHosts are the names a node is reached at by its peers: its pod name and its
// DNS names under the pool's headless Service.
func TransportHosts(sc *v1alpha1.SearchCluster, pool, pod string) []string {
	sub := fmt.Sprintf("%s.%s.%s.svc", pod, PoolName(sc, pool), sc.Namespace)
	return []string{pod, sub, sub + ".cluster.local"}
}

// HTTPHosts are the names HTTP clients reach a node at: its transport names and every
// form of the client Service's name.
func HTTPHosts(sc *v1alpha1.SearchCluster, pool, pod string) []string {
	svc := ClientServiceName(sc)
	return append(TransportHosts(sc, pool, pod),
		svc, svc+"."+sc.Namespace, svc+"."+sc.Namespace+".svc", svc+"."+sc.Namespace+".svc.cluster.local")
}

// PodNames are a pool's pods for its replicas.
func PodNames(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool) []string {
	out := make([]string, 0, p.Replicas)
	for i := range p.Replicas {
		out = append(out, fmt.Sprintf("%s-%d", PoolName(sc, p.Name), i))
	}
	return out
}

// securitySettings are the security plugin's opensearch.yml settings: PEM certificates
// per node (the node finds its own by NODE_NAME), TLS on both layers, the cluster's nodes
// and admin by subject, and the security index initialised from the mounted configuration
// on the first start. Every key is one of the plugin's (a test checks them against its
// source's list).
func securitySettings(sc *v1alpha1.SearchCluster) map[string]any {
	cert := func(layer string) string { return certsDir + "/${NODE_NAME}." + layer }
	trusted := certsDir + "/" + TrustBundleKey
	return map[string]any{
		"plugins.security.ssl.transport.pemcert_filepath":       cert("transport") + ".crt",
		"plugins.security.ssl.transport.pemkey_filepath":        cert("transport") + ".key",
		"plugins.security.ssl.transport.pemtrustedcas_filepath": trusted,
		// Peers connect by IP address, which the certificates do not name; the CA and
		// nodes_dn decide who is a node.
		"plugins.security.ssl.transport.enforce_hostname_verification": false,
		"plugins.security.ssl.http.enabled":                            true,
		"plugins.security.ssl.http.pemcert_filepath":                   cert("http") + ".crt",
		"plugins.security.ssl.http.pemkey_filepath":                    cert("http") + ".key",
		"plugins.security.ssl.http.pemtrustedcas_filepath":             trusted,
		"plugins.security.nodes_dn":                                    []string{NodesDN(sc)},
		"plugins.security.authcz.admin_dn":                             []string{AdminDN(sc)},
		"plugins.security.allow_default_init_securityindex":            true,
		"plugins.security.restapi.roles_enabled":                       []string{"all_access"},
		"plugins.security.check_snapshot_restore_write_privileges":     true,
		"plugins.security.enable_snapshot_restore_privilege":           true,
	}
}

// SecurityRevision is what a secured pool's pods were started with: the trusted CAs'
// fingerprint and the issue time of the pool's certificates. Both go on the pod template.
type SecurityRevision struct {
	Trust, Issued string
	// NotAfter is when the certificates of an issue end, by issue time: the current issue
	// and the latest ones before it, which pods not yet restarted still serve.
	NotAfter map[string]time.Time
}

// CertificatesExpire is when the certificates pod started with end (its template's
// CertificatesAnnotation names their issue); zero when that issue is not known.
func (r SecurityRevision) CertificatesExpire(pod *corev1.Pod) time.Time {
	return r.NotAfter[pod.Annotations[CertificatesAnnotation]]
}

// securePod turns the OpenSearch container of a pool into a secured one: certificates and
// security configuration mounted, readiness probed over TLS as the probe user, and an init
// container that names a missing security plugin instead of a crash loop.
func securePod(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool, image string, c *corev1.Container) ([]corev1.Volume, corev1.Container) {
	volumes := []corev1.Volume{
		{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: CertsSecretName(sc, p.Name), DefaultMode: ptr.To[int32](0o440)}}},
		{Name: "security-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: SecurityConfigSecretName(sc), DefaultMode: ptr.To[int32](0o440)}}},
	}
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "certs", MountPath: homeDir + "/config/" + certsDir, ReadOnly: true},
		corev1.VolumeMount{Name: "security-config", MountPath: homeDir + "/config/" + securityConfigDir, ReadOnly: true},
	)
	probeSecret := CredentialsSecretName(sc, ProbeUser)
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "PROBE_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: probeSecret}, Key: corev1.BasicAuthPasswordKey}}},
	)
	// The probe checks the node's own certificate too: it connects to 127.0.0.1 under the
	// pod's name, which the HTTP certificate names.
	c.ReadinessProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", fmt.Sprintf(
		`curl --silent --fail --max-time 3 --cacert %[1]s/config/%[2]s/%[3]s --resolve "${NODE_NAME}:%[4]d:127.0.0.1" `+
			`--user "%[5]s:${PROBE_PASSWORD}" "https://${NODE_NAME}:%[4]d/_cluster/health?local=true" >/dev/null`,
		homeDir, certsDir, TrustBundleKey, HTTPPort, ProbeUser)}}}
	check := corev1.Container{
		Name:  SecurityPluginCheck,
		Image: image,
		Command: []string{"sh", "-c", fmt.Sprintf(
			`[ -d %[1]s ] || { echo "image %[2]s has no security plugin (%[1]s): use an image with it, or set spec.managed.security.enabled: false (development only)" > /dev/termination-log; exit 1; }`,
			securityPluginDir, image)},
		SecurityContext: c.SecurityContext,
	}
	return volumes, check
}
