package managed

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

const (
	keystoreVolume   = "keystore"
	keystoreFile     = "opensearch.keystore"
	keystoreSecrets  = "/tmp/keystore-secrets"
	keystoreDir      = "/tmp/keystore"
	keystoreInitName = "keystore"
)

// keystorePod gives the pod the keystore built from the spec's Secrets, as the official
// Helm chart does: an init container adds every key of every Secret to a new keystore and
// leaves it in an emptyDir, which OpenSearch reads from its config folder. The Secrets'
// values never appear in the pod spec, in logs or in status.
func keystorePod(sc *v1alpha1.SearchCluster, image string, c *corev1.Container) ([]corev1.Volume, *corev1.Container) {
	secrets := sc.Spec.Managed.Keystore
	if len(secrets) == 0 {
		return nil, nil
	}
	volumes := []corev1.Volume{{Name: keystoreVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	init := &corev1.Container{
		Name:  keystoreInitName,
		Image: image,
		Command: []string{"sh", "-c", fmt.Sprintf(`set -eu
conf="${OPENSEARCH_PATH_CONF:-config}"
bin/opensearch-keystore create
for f in %[1]s/*/*; do
  [ -e "$f" ] || continue
  bin/opensearch-keystore add-file "$(basename "$f")" "$f"
done
cp "$conf/%[2]s" %[3]s/%[2]s`, keystoreSecrets, keystoreFile, keystoreDir)},
		WorkingDir:      homeDir,
		VolumeMounts:    []corev1.VolumeMount{{Name: keystoreVolume, MountPath: keystoreDir}},
		SecurityContext: c.SecurityContext,
	}
	for i, ks := range secrets {
		name := fmt.Sprintf("keystore-%d", i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ks.SecretName}}})
		init.VolumeMounts = append(init.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: keystoreSecrets + "/" + ks.SecretName, ReadOnly: true})
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: keystoreVolume, MountPath: homeDir + "/config/" + keystoreFile, SubPath: keystoreFile, ReadOnly: true})
	return volumes, init
}
