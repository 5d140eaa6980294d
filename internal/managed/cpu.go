package managed

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vectorpilot/vectorpilot/internal/simd"
)

// CPUAttribute is the node attribute naming the SIMD level of the CPU a node runs on, as
// the node found it in /proc/cpuinfo where it started: what _nodes reports is what the
// hardware has, not what the pool asked for or the Kubernetes node's labels claim.
const CPUAttribute = "vectorpilot_cpu"

const (
	cpuInitName       = "cpu-features"
	nodeConfigVolume  = "node-config"
	configTemplateDir = "/tmp/config-template"
	nodeConfigDir     = "/tmp/node-config"
)

// CPUAttributeScript is a shell script that finds the SIMD level of the CPU it runs on
// (simd.DetectScript) and appends node.attr.vectorpilot_cpu with it to the opensearch.yml
// at path, before OpenSearch starts.
func CPUAttributeScript(path string) string {
	return fmt.Sprintf(`level=$(
%s)
printf '\n%s: %%s\n' "$level" >> %s
echo "CPU SIMD level: $level"
`, simd.DetectScript(), "node.attr."+CPUAttribute, path)
}

// cpuDetectPod gives the pod an opensearch.yml that is the pool's plus the CPU level of the
// machine the pod landed on: an init container runs simd.DetectScript there and writes
// both into an emptyDir, from which the OpenSearch container reads its opensearch.yml.
func cpuDetectPod(image string, c *corev1.Container) (corev1.Volume, corev1.Container) {
	script := fmt.Sprintf("set -eu\ncp %s/%s %s/%s\n", configTemplateDir, configFile, nodeConfigDir, configFile) +
		CPUAttributeScript(nodeConfigDir+"/"+configFile)
	init := corev1.Container{
		Name:    cpuInitName,
		Image:   image,
		Command: []string{"sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: configTemplateDir, ReadOnly: true},
			{Name: nodeConfigVolume, MountPath: nodeConfigDir},
		},
		SecurityContext: c.SecurityContext,
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: nodeConfigVolume, MountPath: homeDir + "/config/" + configFile, SubPath: configFile, ReadOnly: true})
	return corev1.Volume{Name: nodeConfigVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, init
}
