package kubenode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v10/controller"
)

// StorageClassName is the node's default StorageClass: claims without a class get a
// directory on the node, as kind's local-path class gives them.
const StorageClassName = "vpnode-local"

// provisionerName is the provisioner the StorageClass names.
const provisionerName = "vpnode/local-volumes"

// localVolumes provisions each claim as a directory under the node's work folder, exposed as
// a local PersistentVolume pinned to the node. It is the harness's stand-in for a storage
// system, driven by the external-provisioner library the CSI provisioners share, so claims
// go through the real PV controller, the scheduler's volume binding (WaitForFirstConsumer)
// and the kubelet's local volume plugin.
type localVolumes struct{ dir string }

// Provision makes the claim's directory, writable by any uid (pods run as their image's
// user), and the PersistentVolume for it.
func (l localVolumes) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	if opts.SelectedNode == nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s has no selected node: the class binds on first consumer", opts.PVC.Name)
	}
	path := filepath.Join(l.dir, opts.PVName)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	if err := os.Chmod(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			VolumeMode:                    opts.PVC.Spec.VolumeMode,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: opts.PVC.Spec.Resources.Requests[corev1.ResourceStorage]},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn,
					Values: []string{opts.SelectedNode.Labels[corev1.LabelHostname]}}},
			}}}},
		},
	}, controller.ProvisioningFinished, nil
}

// Delete removes a released volume's directory; the library deletes the object.
func (l localVolumes) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.Local == nil || !strings.HasPrefix(pv.Spec.Local.Path, l.dir+string(filepath.Separator)) {
		return fmt.Errorf("volume %s is not one of this node's directories", pv.Name)
	}
	return os.RemoveAll(pv.Spec.Local.Path)
}

// startVolumes creates the default StorageClass and runs the provisioner until Stop.
func (c *Cluster) startVolumes() error {
	dir := filepath.Join(c.work, "volumes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	class := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       provisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if _, err := c.Client.StorageV1().StorageClasses().Create(context.Background(), class, metav1.CreateOptions{}); err != nil {
		return err
	}
	logPath := filepath.Join(c.work, "logs", "provisioner.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	c.logs["provisioner"] = logPath
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan struct{})
	pc := controller.NewProvisionController(logger, c.Client, provisionerName, localVolumes{dir: dir},
		controller.LeaderElection(false))
	go func() {
		defer close(done)
		pc.Run(ctx)
	}()
	c.stopVolumes = func() {
		cancel()
		<-done
		_ = logFile.Close()
	}
	return nil
}
