package v1alpha1

// Reasons: every condition and every Event the operator writes carries one of these. They
// are API — users alert, search and automate on them — so they are declared here, once;
// test/reasons_test.go fails on a reason written anywhere else. docs/troubleshooting.md's
// table says what the Degraded and Progressing ones mean and what to do.
const (
	ReasonAdopted               = "Adopted"
	ReasonAllocationNotRestored = "AllocationNotRestored"
	// ReasonApplyFailed: the API server refused an object the operator built for a managed
	// cluster; the message is its answer.
	ReasonApplyFailed      = "ApplyFailed"
	ReasonArgoNotInstalled = "ArgoNotInstalled"
	ReasonBenchmarkFailed  = "BenchmarkFailed"
	ReasonBenchmarkInvalid = "BenchmarkInvalid"
	ReasonBenchmarkMissing = "BenchmarkMissing"
	ReasonBenchmarking     = "Benchmarking"
	// ReasonCAChanged: the cluster's CA was created, a new one introduced or promoted, or
	// an expired one dropped (an Event).
	ReasonCAChanged = "CAChanged"
	// ReasonCertificatesRotated: a pool's certificates were re-issued; its nodes restart
	// onto them (an Event).
	ReasonCertificatesRotated = "CertificatesRotated"
	// ReasonClusterBlocked: OpenSearch refused a write because of a cluster or index block
	// (e.g. flood-stage disk watermark): not a credentials problem.
	ReasonClusterBlocked  = "ClusterBlocked"
	ReasonClusterNotFound = "ClusterNotFound"
	ReasonClusterNotReady = "ClusterNotReady"
	ReasonClusterRed      = "ClusterRed"
	ReasonConflict        = "Conflict"
	// ReasonCRDOutdated: an installed CRD lacks fields or versions the operator needs; the
	// controllers wait (a Warning Event on the CRD).
	ReasonCRDOutdated  = "CRDOutdated"
	ReasonCreateFailed = "CreateFailed"
	ReasonCreated      = "Created"
	// ReasonDatasetTooLarge: a Local run's dataset would not fit the operator's budget.
	ReasonDatasetTooLarge = "DatasetTooLarge"
	// ReasonDefaultsRecorded: the operator wrote into a managed cluster's spec the defaults
	// it runs the cluster with — today's for a new cluster, what an older operator ran it
	// with for an existing one (an Event).
	ReasonDefaultsRecorded = "DefaultsRecorded"
	ReasonFieldsAdded      = "FieldsAdded"
	// Blue/green rebuilds: one started (an Event); it is copying, gating or swapping (the
	// Progressing reason); its new index passed or failed the gate (RebuildGateFailed's
	// reasons, and Events); the alias moved to it (an Event); it could not go on (Degraded);
	// the index it replaced was deleted or released once retainPrevious was over (Events).
	ReasonRebuildStarted          = "RebuildStarted"
	ReasonRebuilding              = "Rebuilding"
	ReasonRebuildGatePassed       = "RebuildGatePassed"
	ReasonRebuildGateFailed       = "RebuildGateFailed"
	ReasonRebuildSwapped          = "RebuildSwapped"
	ReasonRebuildFailed           = "RebuildFailed"
	ReasonPreviousIndexDeleted    = "PreviousIndexDeleted"
	ReasonPreviousIndexReleased   = "PreviousIndexReleased"
	ReasonFinalSnapshotFailed     = "FinalSnapshotFailed"
	ReasonFinalSnapshotInProgress = "FinalSnapshotInProgress"
	ReasonFinalSnapshotStarted    = "FinalSnapshotStarted"
	ReasonFinalSnapshotSucceeded  = "FinalSnapshotSucceeded"
	ReasonIndexDeleted            = "IndexDeleted"
	ReasonIndexHealthRed          = "IndexRed"
	// ReasonRepresentationRecommended: a run's representation sweep named the cheapest
	// representation meeting its recall target (an Event).
	ReasonRepresentationRecommended = "RepresentationRecommended"
	// ReasonScratchIndexTaken: a run's representation sweep found its scratch index name
	// held by an index that is not the run's; nothing was written to it.
	ReasonScratchIndexTaken = "ScratchIndexTaken"
	// ReasonCPUCorrected: live node CPU disagreed with the benchmark table's prediction
	// for spec.tuning.cpuWindow and the tuner corrected the table's CPU (an Event).
	ReasonCPUCorrected = "CPUCorrected"
	// ReasonSIMDRecommended: a run's variants named the SIMD level to ask for (an Event).
	ReasonSIMDRecommended = "SIMDRecommended"
	// ReasonVariantWithoutCopy: a run's variant matches no node, or its nodes miss a
	// started copy of a shard and none is on its way (or it did not come in time), so its
	// queries could not be served by them alone.
	ReasonVariantWithoutCopy = "VariantWithoutCopy"
	// ReasonIndexNotEmpty: the index holds documents that are not the run's dataset.
	ReasonIndexNotEmpty = "IndexNotEmpty"
	ReasonIndexNotFound = "IndexNotFound"
	// ReasonIndexNotReady: the run waits until its VectorIndex is Ready, so it measures an
	// index the operator owns and has converged.
	ReasonIndexNotReady      = "IndexNotReady"
	ReasonIndexRecreated     = "IndexRecreated"
	ReasonIndexReplaced      = "IndexReplaced"
	ReasonIndexRetained      = "IndexRetained"
	ReasonInsecureSkipVerify = "InsecureSkipVerify"
	// ReasonStartingOver: a Local run's attempt failed in a way OpenSearch may not repeat
	// (no answer, 429, 5xx); the run starts again (a condition and an Event).
	ReasonStartingOver = "StartingOver"
	// ReasonInterrupted: a Local run was started maxLocalAttempts times without ending.
	ReasonInterrupted     = "Interrupted"
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonInvalidSecret   = "InvalidSecret"
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonKNNPluginMissing: the cluster answers but no node has the k-NN plugin.
	ReasonKNNPluginMissing = "KNNPluginMissing"
	ReasonNoIndexes        = "NoIndexes"
	ReasonNoResults        = "NoResults"
	ReasonOpenSearchError  = "OpenSearchError"
	// ReasonOpenSearchClusterNotFound: spec.external.openSearchClusterRef names an
	// OpenSearchCluster that does not exist, or the OpenSearch operator's API is not served.
	ReasonOpenSearchClusterNotFound = "OpenSearchClusterNotFound"
	// ReasonOpenSearchClusterInvalid: the OpenSearchCluster lacks what its endpoint is read
	// from (spec.general.serviceName).
	ReasonOpenSearchClusterInvalid = "OpenSearchClusterInvalid"
	ReasonPaused                   = "PausedByAnnotation"
	ReasonPodsStarting             = "PodsStarting"
	// ReasonPodsFailing: a pod's containers cannot run (a crash loop, an image that
	// cannot be pulled); the message has their last words.
	ReasonPodsFailing = "PodsFailing"
	ReasonQueued      = "Queued"
	ReasonReachable   = "Reachable"
	ReasonReconciled  = "Reconciled"
	ReasonReconciling = "Reconciling"
	ReasonRejected    = "RejectedByOpenSearch"
	// Models of method ivf fields: training started, its sample missing or smaller than the
	// method's nlist, training failed (trained again), a model deleted with its index.
	ReasonTrainingStarted        = "TrainingStarted"
	ReasonTrainingSampleMissing  = "TrainingSampleMissing"
	ReasonTrainingSampleTooSmall = "TrainingSampleTooSmall"
	ReasonTrainingFailed         = "TrainingFailed"
	ReasonModelDeleted           = "ModelDeleted"
	// ReasonUnsupportedByCluster: the cluster's version cannot create an index of the spec
	// (an engine it retired); nothing was sent.
	ReasonUnsupportedByCluster = "UnsupportedByCluster"
	ReasonRepositoryError      = "RepositoryError"
	ReasonRestoreFailed        = "RestoreFailed"
	ReasonRestored             = "Restored"
	ReasonResumed              = "Resumed"
	ReasonRollingRestart       = "RollingRestart"
	// ReasonRunnerNotAllowed: an Argo run asks for an image or service account the operator's
	// allowlists do not hold.
	ReasonRunnerNotAllowed = "RunnerNotAllowed"
	// ReasonScalingDown: nodes a shrinking or removed pool no longer wants are drained and
	// removed one at a time.
	ReasonScalingDown = "ScalingDown"
	// ReasonRestoredFromRemoteStore: a remote-backed index's lost primaries were restored
	// from the remote store (event).
	ReasonRestoredFromRemoteStore = "RestoredFromRemoteStore"
	// ReasonNoWarmNodes: a RemoteSnapshot index waits for a node with the warm role.
	ReasonNoWarmNodes = "NoWarmNodes"
	// ReasonNodeRemoved: a drained node's pod was removed (event).
	ReasonNodeRemoved = "NodeRemoved"
	// ReasonNodeDraining: a node is excluded from shard allocation so its shards move
	// off (event).
	ReasonNodeDraining = "NodeDraining"
	// ReasonPoolRemoved: a removed pool's last node left; its objects were deleted (event).
	ReasonPoolRemoved = "PoolRemoved"
	// ReasonUpgradePaused: a version upgrade waits for the cluster to turn green.
	ReasonUpgradePaused = "UpgradePaused"
	// ReasonUpgradeRefused: a version upgrade's pre-flight found indexes the target version
	// could not serve; no node restarted.
	ReasonUpgradeRefused = "UpgradeRefused"
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecurityDisabled: a managed cluster runs without TLS and authentication
	// (spec.managed.security.enabled: false).
	ReasonSecurityDisabled = "SecurityDisabled"
	// ReasonSecurityPluginMissing: a secured cluster's image has no security plugin.
	ReasonSecurityPluginMissing = "SecurityPluginMissing"
	// ReasonSecurityError: the operator could not keep the cluster's CA, certificates or
	// users (a user's CA Secret that is not a CA, an API error).
	ReasonSecurityError    = "SecurityError"
	ReasonSettingsRestored = "SettingsRestored"
	ReasonSettingsUpdated  = "SettingsUpdated"
	// ReasonPrivilegedStepRefused: mmap InitContainer asked for a privileged step the
	// ReasonNameConflict: an object the operator would make for a cluster exists and is
	// ReasonCredentialsLost: a managed cluster's credentials Secret was deleted or given
	// another password than the one its security index holds; the user restores it.
	ReasonCredentialsLost = "CredentialsLost"
	// not the cluster's; it is left alone.
	ReasonNameConflict = "NameConflict"
	// operator was installed without (no sysctl image).
	ReasonPrivilegedStepRefused = "PrivilegedStepRefused"
	// ReasonSecretNotAllowed: a Secret a SearchCluster names does not consent to that
	// cluster using it (annotation vectorpilot.io/searchclusters).
	ReasonSecretNotAllowed      = "SecretNotAllowed"
	ReasonSnapshotDeleted       = "SnapshotDeleted"
	ReasonSnapshotFailed        = "SnapshotFailed"
	ReasonSnapshotIndexNotFound = "SnapshotIndexNotFound"
	ReasonSnapshotMissing       = "SnapshotMissing"
	ReasonSnapshotNotFound      = "SnapshotNotFound"
	ReasonSnapshotNotReady      = "SnapshotNotReady"
	// ReasonSnapshotPartial: a snapshot ended PARTIAL: some shards were not saved.
	ReasonSnapshotPartial  = "SnapshotPartial"
	ReasonSnapshotPruned   = "SnapshotPruned"
	ReasonSnapshotRetained = "SnapshotRetained"
	// ReasonFaissLibraryMismatch: a pool's nodes loaded another faiss library variant than
	// their simd level and CPUs select, or failed to load it.
	ReasonFaissLibraryMismatch = "FaissLibraryMismatch"
	// ReasonSIMDUnavailable: a pool's nodes report a CPU without the SIMD level it asked for.
	ReasonSIMDUnavailable   = "SIMDUnavailable"
	ReasonSnapshotScheduled = "SnapshotScheduled"
	ReasonSnapshotStalled   = "SnapshotStalled"
	// ReasonSnapshotStateUnknown: the snapshot's state in its repository could not be
	// read; the operator retries, and never deletes a snapshot whose state it has not read.
	ReasonSnapshotStateUnknown = "SnapshotStateUnknown"
	ReasonSnapshotStarted      = "SnapshotStarted"
	ReasonSnapshotSucceeded    = "SnapshotSucceeded"
	ReasonTLSError             = "TLSError"
	ReasonTuned                = "Tuned"
	ReasonUnauthorized         = "Unauthorized"
	ReasonUnreachable          = "Unreachable"
	ReasonUnschedulable        = "Unschedulable"
	ReasonWorkflowCreated      = "WorkflowCreated"
	// ReasonWorkflowTemplateNotFound: an Argo run's spec.runner.workflowTemplateRef names no
	// WorkflowTemplate in its namespace (yet); the run waits for it.
	ReasonWorkflowTemplateNotFound = "WorkflowTemplateNotFound"
	// ReasonRecallBelowTarget / ReasonRecallOnTarget: the live recall measured is below
	// spec.recall.target, or meets it (condition RecallBelowTarget, and an Event when it
	// changes).
	ReasonRecallBelowTarget = "RecallBelowTarget"
	ReasonRecallOnTarget    = "RecallOnTarget"
	// ReasonRecallNotMeasured: no recall measurement has run yet (the message says why:
	// the index is empty or red, the nodes' CPU is above the headroom, a search failed).
	ReasonRecallNotMeasured = "RecallNotMeasured"
)
