package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SearchClusterSpec declares an OpenSearch cluster with the k-NN plugin that indexes are
// placed on.
// +kubebuilder:validation:XValidation:rule="has(self.external)",message="spec.external is required: only external clusters are supported in this version"
type SearchClusterSpec struct {
	// external is an OpenSearch endpoint the operator only talks to: a managed service, a
	// cluster from the OpenSearch Helm chart or another operator.
	// +optional
	External *ExternalCluster `json:"external,omitempty"`
}

// ExternalCluster is how the operator reaches a cluster it does not run.
type ExternalCluster struct {
	// endpoint is the cluster's HTTP(S) URL, e.g. https://opensearch.search.svc:9200.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('http://') || self.startsWith('https://'))",message="spec.external.endpoint must be an http:// or https:// URL"
	Endpoint string `json:"endpoint"`

	// credentialsSecretRef names a Secret with keys username and password for HTTP basic auth.
	// +optional
	CredentialsSecretRef *LocalObjectReference `json:"credentialsSecretRef,omitempty"`

	// caSecretRef names a Secret whose key ca.crt holds the PEM CA bundle that signs the
	// endpoint's certificate.
	// +optional
	CASecretRef *LocalObjectReference `json:"caSecretRef,omitempty"`

	// insecureSkipVerify turns off TLS certificate verification. For development only.
	// +optional
	// +kubebuilder:default=false
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// SearchClusterStatus is what the operator last observed of the cluster.
type SearchClusterStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// version is the OpenSearch version the cluster reports.
	// +optional
	Version string `json:"version,omitempty"`
	// health is the cluster health: green, yellow or red.
	// +optional
	Health string `json:"health,omitempty"`
	// nodes is the number of nodes in the cluster.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// knnPluginVersion is the version of the k-NN plugin found on the nodes, empty when absent.
	// +optional
	KNNPluginVersion string `json:"knnPluginVersion,omitempty"`
	// conditions: Ready, Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SearchCluster is an OpenSearch cluster with the k-NN plugin.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sc,categories=vectorpilot
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.external.endpoint`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SearchCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SearchClusterSpec   `json:"spec,omitempty"`
	Status SearchClusterStatus `json:"status,omitempty"`
}

// SearchClusterList is a list of SearchCluster.
// +kubebuilder:object:root=true
type SearchClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SearchCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SearchCluster{}, &SearchClusterList{})
}
