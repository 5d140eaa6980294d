package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/conditions"
	"github.com/vectorpilot/vectorpilot/internal/connect"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/security"
	"github.com/vectorpilot/vectorpilot/internal/steps"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update

// IssuedAtAnnotation on a certificates Secret is when its certificates were last
// re-issued together.
const IssuedAtAnnotation = "vectorpilot.io/issued-at"

// issuesAnnotation on a certificates Secret is when the certificates of its latest issues
// end, by issue time (JSON): a pod not yet restarted onto re-issued certificates serves
// those of its issue until then, however many re-issues it waited through.
const issuesAnnotation = "vectorpilot.io/issues"

// issuesKept is how many issues issuesAnnotation remembers.
const issuesKept = 5

// credentialsDigestAnnotation on the security configuration Secret names the passwords it
// was rendered from (security.CredentialsDigest).
const credentialsDigestAnnotation = "vectorpilot.io/credentials-digest"

// secure keeps a secured cluster's material: its CA, each pool's and the admin's
// certificates, the users' passwords and the security plugin's configuration. It records
// each pool's revision for the pod templates, and looks again when the earliest
// certificate is due for renewal, if that comes before the next poll. Secrets are read
// past the cache: the operator keeps no informer on Secrets.
func (r *SearchClusterReconciler) secure(ctx context.Context, m *clusterRun) steps.Result {
	sc := m.sc
	if !managed.SecurityEnabled(sc) {
		sc.Status.Certificates = nil
		r.setSecured(sc, metav1.ConditionFalse, v1alpha1.ReasonSecurityDisabled,
			"spec.managed.security.enabled is false: plain HTTP and no users; any client that reaches port 9200 can read, write and delete every index (development only)")
		return steps.Continue()
	}
	// A user's Secret missing or malformed waits for the user, with its reason; anything
	// else is a SecurityError retried on the backoff.
	fail := func(err error) steps.Result {
		reason, result := v1alpha1.ReasonSecurityError, steps.Done(err)
		if cerr := (*connect.Error)(nil); errors.As(err, &cerr) {
			reason, result = cerr.Reason, steps.StopFor(r.Options.ClusterPollInterval)
		}
		if nc := (*nameConflict)(nil); errors.As(err, &nc) {
			reason, result = v1alpha1.ReasonNameConflict, steps.StopFor(r.Options.ClusterPollInterval)
		}
		r.setSecured(sc, metav1.ConditionFalse, reason, err.Error())
		m.failed = &stepFailure{reason: reason, message: err.Error()}
		return result
	}
	var user *security.UserCA
	if ref := sc.Spec.Managed.Security.TLS.CASecretRef; ref != nil {
		data, err := connect.ClusterSecret(ctx, r.APIReader, sc, ref.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
		if err != nil {
			return fail(err)
		}
		user = &security.UserCA{CertPEM: data[corev1.TLSCertKey], KeyPEM: data[corev1.TLSPrivateKeyKey]}
	}
	lifetimes := security.LifetimesOf(sc)
	now := time.Now()
	caSecret, err := r.readSecret(ctx, sc.Namespace, managed.CASecretName(sc))
	if err != nil {
		return fail(err)
	}
	rolled, err := r.trustRolled(ctx, sc, security.Fingerprint(security.TrustOf(caSecret.Data)))
	if err != nil {
		return fail(err)
	}
	auth, err := security.PlanCA(security.CAInput{Current: caSecret.Data, User: user, Rolled: rolled, Now: now,
		Lifetimes: lifetimes, CommonName: fmt.Sprintf("vectorpilot CA %s/%s", sc.Namespace, sc.Name)})
	if err != nil {
		return fail(err)
	}
	if err := r.writeSecret(ctx, sc, caSecret, auth.Data, nil, true); err != nil {
		return fail(err)
	}
	if auth.Event != "" {
		r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonCAChanged, "Certificates", "CA %q: %s", auth.Signing.Subject.CommonName, auth.Event)
	}
	bundle := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: managed.CABundleName(sc), Namespace: sc.Namespace, Labels: securityLabels(sc)},
		Data:       map[string]string{managed.TrustBundleKey: string(auth.Trust)},
	}
	if err := r.apply(ctx, sc, bundle); err != nil {
		return fail(err)
	}
	m.security = map[string]managed.SecurityRevision{}
	trust := security.Fingerprint(auth.Trust)
	var earliest *security.Leaves
	// keep returns the Secret's certificates and when each issue its pods may serve ends.
	keep := func(name string, specs []security.LeafSpec) (security.Leaves, map[string]time.Time, error) {
		s, err := r.readSecret(ctx, sc.Namespace, name)
		if err != nil {
			return security.Leaves{}, nil, err
		}
		leaves, err := security.PlanLeaves(security.LeavesInput{Current: s.Data, IssuedAt: s.Annotations[IssuedAtAnnotation],
			Specs: specs, Authority: auth, Now: now, Lifetimes: lifetimes})
		if err != nil {
			return security.Leaves{}, nil, err
		}
		issues := security.Issues{}
		_ = json.Unmarshal([]byte(s.Annotations[issuesAnnotation]), &issues) // unreadable: start again
		if leaves.Reissued && !leaves.ReplacedNotAfter.IsZero() {
			issues[s.Annotations[IssuedAtAnnotation]] = leaves.ReplacedNotAfter
		}
		issues[leaves.IssuedAt] = leaves.NotAfter
		issues.Keep(issuesKept)
		record, err := json.Marshal(issues)
		if err != nil {
			return security.Leaves{}, nil, err
		}
		annotations := map[string]string{IssuedAtAnnotation: leaves.IssuedAt, issuesAnnotation: string(record)}
		if err := r.writeSecret(ctx, sc, s, leaves.Data, annotations, true); err != nil {
			return security.Leaves{}, nil, err
		}
		if leaves.Reissued && s.ResourceVersion != "" {
			r.Recorder.Eventf(sc, nil, corev1.EventTypeNormal, v1alpha1.ReasonCertificatesRotated, "Certificates",
				"re-issued the certificates in Secret %s (valid until %s); their nodes restart onto them", name, leaves.NotAfter.UTC().Format(time.RFC3339))
		}
		if earliest == nil || leaves.NotAfter.Before(earliest.NotAfter) {
			earliest = &leaves
		}
		return leaves, issues, nil
	}
	for _, p := range sc.Spec.Managed.NodePools {
		leaves, notAfter, err := keep(managed.CertsSecretName(sc, p.Name), security.PoolSpecs(sc, p))
		if err != nil {
			return fail(err)
		}
		m.security[p.Name] = managed.SecurityRevision{Trust: trust, Issued: leaves.IssuedAt, NotAfter: notAfter}
	}
	if _, _, err := keep(managed.AdminCertSecretName(sc), []security.LeafSpec{security.AdminSpec(sc)}); err != nil {
		return fail(err)
	}
	if err := r.keepUsers(ctx, sc); err != nil {
		return fail(err)
	}
	sc.Status.Certificates = &v1alpha1.CertificatesStatus{Issuer: auth.Signing.Subject.String(),
		NotAfter: metav1.NewTime(earliest.NotAfter.UTC().Truncate(time.Second)), RenewAt: metav1.NewTime(earliest.RenewAt.UTC().Truncate(time.Second))}
	r.setSecured(sc, metav1.ConditionTrue, v1alpha1.ReasonReconciled, fmt.Sprintf(
		"TLS on the transport and HTTP layers, basic authentication; certificates valid until %s, renewed at %s",
		sc.Status.Certificates.NotAfter.Format(time.RFC3339), sc.Status.Certificates.RenewAt.Format(time.RFC3339)))
	// Renewal due before the next poll: look again then. Otherwise the poll comes first.
	if until := time.Until(earliest.RenewAt); until < r.Options.ClusterPollInterval {
		return steps.After(until)
	}
	return steps.Continue()
}

// keepUsers creates each user's credentials Secret with a generated password the first
// time, and renders the security configuration from them when they changed. Neither is
// owned by the SearchCluster: like the data volumes they outlive it, because the security
// index on those volumes keeps the passwords' hashes.
//
// The security index is initialised from that configuration once, when the cluster first
// starts, and keeps the passwords' hashes: a password the configuration holds a hash of is
// never regenerated. A credentials Secret deleted, or given another password, is reported
// (CredentialsLost) until the user restores it — a new password would lock the operator
// and every restarted pod's readiness probe out of the cluster.
func (r *SearchClusterReconciler) keepUsers(ctx context.Context, sc *v1alpha1.SearchCluster) error {
	s, err := r.readSecret(ctx, sc.Namespace, managed.SecurityConfigSecretName(sc))
	if err != nil {
		return err
	}
	initialised := security.InitialisedHashes(s.Data)
	passwords := map[string]string{}
	for _, u := range security.Users {
		creds, err := r.readSecret(ctx, sc.Namespace, managed.CredentialsSecretName(sc, u))
		if err != nil {
			return err
		}
		pw := string(creds.Data[corev1.BasicAuthPasswordKey])
		lost := creds.ResourceVersion == "" || pw == ""
		if _, ok := initialised[u]; ok && lost {
			return r.credentialsLost(sc, creds.Name, u, "is gone")
		}
		if lost {
			if pw, err = security.NewPassword(); err != nil {
				return err
			}
			creds.Type = corev1.SecretTypeBasicAuth
			data := map[string][]byte{corev1.BasicAuthUsernameKey: []byte(u), corev1.BasicAuthPasswordKey: []byte(pw)}
			if err := r.writeSecret(ctx, sc, creds, data, nil, false); err != nil {
				return err
			}
		}
		passwords[u] = pw
	}
	digest := security.CredentialsDigest(passwords)
	if s.ResourceVersion != "" && s.Annotations[credentialsDigestAnnotation] == digest {
		return nil
	}
	// Some password differs from what the configuration was rendered from (bcrypt is slow on
	// purpose, so this is checked only then).
	for u, hash := range initialised {
		if !security.PasswordMatches(hash, passwords[u]) {
			return r.credentialsLost(sc, managed.CredentialsSecretName(sc, u), u, "holds another password")
		}
	}
	files, err := security.ConfigFiles(sc, passwords)
	if err != nil {
		return err
	}
	return r.writeSecret(ctx, sc, s, files, map[string]string{credentialsDigestAnnotation: digest}, false)
}

// credentialsLost reports a credentials Secret that no longer holds the password the
// cluster's security index was initialised with.
func (r *SearchClusterReconciler) credentialsLost(sc *v1alpha1.SearchCluster, secret, user, what string) error {
	err := &connect.Error{Reason: v1alpha1.ReasonCredentialsLost, Message: fmt.Sprintf(
		"Secret %s/%s of user %s %s: the cluster's security index was initialised with the hash of its password (Secret %s, internal_users.yml), "+
			"and the operator does not change a formed cluster's passwords, since a new one would lock it and the pods' readiness probes out. "+
			"Restore the Secret (keys username, password) from a backup",
		sc.Namespace, secret, user, what, managed.SecurityConfigSecretName(sc))}
	r.Recorder.Eventf(sc, nil, corev1.EventTypeWarning, v1alpha1.ReasonCredentialsLost, "Security", "%s", err.Message)
	return err
}

// trustRolled says whether every pod of the cluster is ready and was started with the
// trust bundle of fingerprint trust.
func (r *SearchClusterReconciler) trustRolled(ctx context.Context, sc *v1alpha1.SearchCluster, trust string) (bool, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(sc.Namespace), client.MatchingLabels(managed.ClusterSelector(sc))); err != nil {
		return false, err
	}
	want := 0
	for _, p := range sc.Spec.Managed.NodePools {
		want += int(p.Replicas)
	}
	if len(pods.Items) != want {
		return false, nil
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !managed.PodReady(pod) || pod.Annotations[managed.TrustAnnotation] != trust {
			return false, nil
		}
	}
	return true, nil
}

// readSecret reads a Secret past the cache; a missing one comes back empty, named, with no
// resourceVersion.
func (r *SearchClusterReconciler) readSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, nil
	}
	return s, err
}

// writeSecret creates s, or updates it when its data or the given annotations differ. An
// owned Secret goes with the SearchCluster; a retained one stays.
// A Secret that exists and is not the cluster's — not controlled by it (owned), not labelled
// as its security material (retained) — is a *nameConflict, left as it is.
func (r *SearchClusterReconciler) writeSecret(ctx context.Context, sc *v1alpha1.SearchCluster, s *corev1.Secret, data map[string][]byte, annotations map[string]string, owned bool) error {
	labelled := true
	for k, v := range securityLabels(sc) {
		labelled = labelled && s.Labels[k] == v
	}
	if s.ResourceVersion != "" && !metav1.IsControlledBy(s, sc) && (owned || !labelled) {
		return &nameConflict{kind: "Secret", namespace: s.Namespace, name: s.Name}
	}
	same := maps.EqualFunc(s.Data, data, bytes.Equal)
	for k, v := range annotations {
		same = same && s.Annotations[k] == v
	}
	if same && s.ResourceVersion != "" {
		return nil
	}
	s.Data = data
	s.Labels = securityLabels(sc)
	if len(annotations) > 0 && s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	maps.Copy(s.Annotations, annotations)
	if owned {
		if err := controllerutil.SetControllerReference(sc, s, r.Scheme()); err != nil {
			return err
		}
	}
	if s.ResourceVersion == "" {
		return r.Create(ctx, s)
	}
	return r.Update(ctx, s)
}

func securityLabels(sc *v1alpha1.SearchCluster) map[string]string {
	return map[string]string{managed.ManagedByLabel: managed.ManagedBy, managed.ClusterLabel: sc.Name}
}

// setSecured sets the Secured condition; turning security off is announced by a Warning
// Event once, when the condition first says so.
func (r *SearchClusterReconciler) setSecured(sc *v1alpha1.SearchCluster, status metav1.ConditionStatus, reason, message string) {
	before := meta.FindStatusCondition(sc.Status.Conditions, v1alpha1.ConditionSecured)
	if reason == v1alpha1.ReasonSecurityDisabled && (before == nil || before.Reason != reason) {
		r.Recorder.Eventf(sc, nil, corev1.EventTypeWarning, reason, "Security", "%s", message)
	}
	conditions.SetAspect(&sc.Status.Conditions, sc.Generation, v1alpha1.ConditionSecured, status, reason, message)
}
