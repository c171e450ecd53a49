package v1alpha1

// Condition types shared by every kind. Ready answers "does it serve?"; the
// reason says why not (see the Reason constants).
const (
	// ConditionReady is True when the object's configuration is accepted, its
	// children are applied and up to date, and its workloads have ready replicas.
	ConditionReady = "Ready"
	// ConditionDegraded is True when the object serves, but with less than was asked
	// (some replicas missing, a pool of the farm not ready).
	ConditionDegraded = "Degraded"
	// ConditionStopped is True while an AppPool is stopped: by its
	// administrator (spec.state), or by health monitoring (rapid-fail
	// protection or the CPU monitor) until it is restarted; its reason and
	// message say which and why.
	ConditionStopped = "Stopped"
	// ConditionCPULimitExceeded is True while an AppPool with a cpuLimit has
	// been over it for the limit's interval (IIS CPU monitoring).
	ConditionCPULimitExceeded = "CPULimitExceeded"
	// ConditionMetricsAvailable is False while the autoscaler of an AppPool
	// cannot measure it (Prometheus unreachable, no series, NaN); its
	// replicas hold (or follow fallbackReplicas) and never go down.
	ConditionMetricsAvailable = "MetricsAvailable"
	// ConditionPaused is True while the PausedAnnotation holds the
	// operator's hands off a resource.
	ConditionPaused = "Paused"
	// ConditionRecycling is False while an AppPool's recycling for memory or
	// requests pauses because it went round in a loop (reason
	// RecyclingLoop); absent otherwise.
	ConditionRecycling = "Recycling"
)

// RecycleAnnotation marks a worker pod the operator is replacing; its value
// is the reason. The pod also gets the lowest pod-deletion-cost, so that
// the pool's ReplicaSet removes it, and no other worker, once its
// replacement is Ready.
const RecycleAnnotation = "webfarm.dev/recycle"

// PausedAnnotation pauses the reconciliation of a WebFarm, AppPool or
// CachePolicy: set to "true", the operator leaves its children, its
// frontends' routes (a farm keeps the routes it had; endpoints still follow
// the pods) and its replicas as they are, until the annotation is removed.
const PausedAnnotation = "webfarm.dev/paused"

// Condition reasons. They are CamelCase and stable: alerts and scripts match them.
const (
	ReasonAvailable        = "Available"
	ReasonPaused           = "Paused"
	ReasonProgressing      = "Progressing"
	ReasonInvalidReference = "InvalidReference"
	ReasonApplyFailed      = "ApplyFailed"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonReplicasMissing  = "ReplicasMissing"
	ReasonPoolsNotReady    = "PoolsNotReady"
	ReasonNotReferenced    = "NotReferenced"
	ReasonScaledToZero     = "ScaledToZero"
	ReasonAsExpected       = "AsExpected"
	// ReasonGatewayClassTemplate: a GatewayClass's parametersRef names the
	// WebFarm, which is the template of the farms made for the class's
	// Gateways and runs no frontend of its own.
	ReasonGatewayClassTemplate = "GatewayClassTemplate"
	// ReasonRapidFailProtection: the pool's workers failed too often and the
	// pool is stopped until restarted (see RestartAnnotation).
	ReasonRapidFailProtection = "RapidFailProtection"
	// ReasonCPULimitExceeded: an AppPool stayed over its cpuLimit for the
	// limit's interval (the CPULimitExceeded condition; with action Shutdown
	// also the Ready reason of the stopped pool).
	ReasonCPULimitExceeded = "CPULimitExceeded"
	// ReasonMetricsUnavailable: the autoscaler has no figure for the pool.
	ReasonMetricsUnavailable = "MetricsUnavailable"
	// ReasonMeasured: the autoscaler measured the pool.
	ReasonMeasured = "Measured"
	// ReasonScaledOut and ReasonScaledIn are the events of the autoscaler's
	// changes to a pool's workers.
	ReasonScaledOut = "ScaledOut"
	ReasonScaledIn  = "ScaledIn"
	// ReasonIdled and ReasonStartedOnDemand are the events of a pool going
	// idle after idle.timeout without requests, and of a request starting it.
	ReasonIdled           = "Idled"
	ReasonStartedOnDemand = "StartedOnDemand"
	// ReasonWithinLimit: the pool's CPU is within its cpuLimit.
	ReasonWithinLimit = "WithinLimit"
	// ReasonStoppedByAdministrator: spec.state is Stopped (the Stopped
	// condition's and the Ready condition's reason, and the event's);
	// ReasonStartedByAdministrator is the event of its start.
	ReasonStoppedByAdministrator = "StoppedByAdministrator"
	ReasonStartedByAdministrator = "StartedByAdministrator"
	// ReasonRecycled is the event of a worker's recycle (its message says
	// which limit it crossed); ReasonRecyclingLoop is the Recycling
	// condition's reason, and the warning's, when recycles follow each
	// other too closely.
	ReasonRecycled      = "Recycled"
	ReasonRecyclingLoop = "RecyclingLoop"

	// Why generated pods do not start: the Ready reason (Degraded too while
	// other pods serve), with the pod and the kubelet's or scheduler's words.

	// ReasonImagePullFailed: an image of the pods cannot be pulled.
	ReasonImagePullFailed = "ImagePullFailed"
	// ReasonContainerCannotStart: a container cannot be created or started
	// (bad configuration: a missing command, a refused security setting).
	ReasonContainerCannotStart = "ContainerCannotStart"
	// ReasonStartupCheckFailed: a container runs but never passes its
	// startup check (the pool's health check or ping) within its start time
	// limit, and the kubelet keeps restarting it: a health check path the
	// content does not have, an app slower than the limit, a wrong port.
	ReasonStartupCheckFailed = "StartupCheckFailed"
	// ReasonUnschedulable: the scheduler finds no node for a pod (not
	// enough CPU or memory, or another reason it gives).
	ReasonUnschedulable = "Unschedulable"
	// ReasonPodCreateFailed: the API server refuses the pods (a quota, an
	// admission policy).
	ReasonPodCreateFailed = "PodCreateFailed"
	// ReasonRolloutStalled: an update cannot finish (its new pods do not
	// start, or it made no progress within its deadline); the pods of the
	// previous version keep serving.
	ReasonRolloutStalled = "RolloutStalled"
)

// Duration is a Go duration string limited to the units people write in
// manifests, each at most once and in the order h, m, s, ms: "500ms", "30s",
// "20m", "29h", "1h30m". The digit limits keep every value within Go's (and
// CEL's) duration range. The CEL rules of Duration fields start with a guard
// that skips values this pattern refuses, so such a value gets the pattern's
// error alone rather than a CEL type conversion error as well.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$`
type Duration string

// ObjectName is the name of another object in the same namespace.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
type ObjectName string

// ContentDirectory is a folder of a pool's content, relative to its root
// ("sites/shop"): names of letters, digits and "-._~" separated by single
// slashes, none of them "." or "..", so it never leads out of the root.
// Its pattern, DocumentName's and ContentPath's are the grammar the
// workers' nginx checks the frontend's site headers against again
// (patterns rather than CEL rules, which would cost a farm's budget for
// each of its many routes).
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*(/[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*$`
type ContentDirectory string

// DocumentName is the file name of a default document ("index.html"):
// letters, digits and "-._~", no slash, not "." or "..".
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$`
type DocumentName string

// ContentPath is a file's path within a site's directory, starting with a
// slash ("/errors/404.html"), with no "." or ".." names.
//
// +kubebuilder:validation:MinLength=2
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$`
type ContentPath string

// DefaultDocuments are the files a folder's URL serves, the first that
// exists (IIS default documents), each named once.
//
// +listType=set
// +kubebuilder:validation:MinItems=1
// +kubebuilder:validation:MaxItems=8
type DefaultDocuments []DocumentName
