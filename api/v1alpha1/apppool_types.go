package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PoolState is the state an administrator sets a pool to.
//
// +kubebuilder:validation:Enum=Started;Stopped
type PoolState string

const (
	// PoolStarted pools run (unless health monitoring stopped them).
	PoolStarted PoolState = "Started"
	// PoolStateStopped pools run no workers until started again.
	PoolStateStopped PoolState = "Stopped"
)

// RestartAnnotation restarts a pool that health monitoring stopped: set it to
// a new value (for example the current time) and the operator starts the
// pool's workers again with a fresh failure count, as "Start" does for a
// stopped IIS application pool.
//
//	kubectl annotate apppool shop webfarm.dev/restart="$(date +%s)" --overwrite
const RestartAnnotation = "webfarm.dev/restart"

// WakeAnnotation starts an idle pool: the operator's activator sets it to the
// time the first request for the idle pool arrived (RFC 3339), and the pool
// leaves Idle when the time is after status.idleSince.
const WakeAnnotation = "webfarm.dev/wake"

// PoolPhase is where a pool stands in its life cycle.
//
// +kubebuilder:validation:Enum=Pending;Running;Degraded;Stopped;Idle
type PoolPhase string

const (
	// PoolPending: the pool's workers are being created or none is ready yet.
	PoolPending PoolPhase = "Pending"
	// PoolRunning: every desired worker is ready.
	PoolRunning PoolPhase = "Running"
	// PoolDegraded: some, not all, workers are ready.
	PoolDegraded PoolPhase = "Degraded"
	// PoolStopped: health monitoring stopped the pool; it answers per the farm's
	// unavailableResponse until restarted.
	PoolStopped PoolPhase = "Stopped"
	// PoolIdle: scaled to zero after the idle timeout; the next request starts it.
	PoolIdle PoolPhase = "Idle"
)

// CPULimitAction is what the CPU monitor does when a pool stays over its limit.
//
// +kubebuilder:validation:Enum=Report;Throttle;Shutdown
type CPULimitAction string

const (
	// CPULimitReport only reports (condition, event, metric): IIS "No action".
	CPULimitReport CPULimitAction = "Report"
	// CPULimitThrottle caps the pool's CPU at the limit.
	CPULimitThrottle CPULimitAction = "Throttle"
	// CPULimitShutdown stops the pool until it is restarted.
	CPULimitShutdown CPULimitAction = "Shutdown"
)

// AppPoolSpec is the desired state of an application pool: a group of identical
// nginx workers, optionally proxying to an application container in each pod.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="has(self.content) || has(self.app)",message="an AppPool needs content, an app, or both"
// +kubebuilder:validation:XValidation:rule="!has(self.app) || !has(self.app.protocol) || self.app.protocol == 'HTTP' || (has(self.idle) && has(self.idle.onDemandStart) && !self.idle.onDemandStart)",message="an app that speaks HTTP2 or GRPC cannot start on demand: set idle.onDemandStart to false"
type AppPoolSpec struct {
	// content is what nginx serves as static files.
	//
	// +optional
	Content *Content `json:"content,omitempty"`

	// app is an application container in each worker pod; nginx proxies to it
	// the requests that match no static file, folders without an index file
	// ("/" included) too, or all requests without content.
	//
	// +optional
	App AppContainer `json:"app,omitzero"`

	// state is Started for a pool that runs, or Stopped for one its
	// administrator stopped (IIS "Stop application pool"): no workers, and
	// the frontend answers its routes as the farm's unavailableResponse says
	// (503, or a reset connection) until state is Started again.
	//
	// +optional
	// +default="Started"
	State PoolState `json:"state,omitempty"`

	// replicas is the number of workers when autoscaling is not set.
	//
	// +optional
	// +default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// cpu is the CPU each worker requests and is limited to: the share of a
	// processor the worker may use (IIS processor affinity).
	//
	// +optional
	// +default="500m"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('10m')) >= 0 && quantity(string(self)).compareTo(quantity('64')) <= 0)",message="cpu must be between 10m and 64"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// memory is the memory each worker requests and is limited to.
	//
	// +optional
	// +default="128Mi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('16Mi')) >= 0 && quantity(string(self)).compareTo(quantity('1Ti')) <= 0)",message="memory must be between 16Mi and 1Ti"
	Memory *resource.Quantity `json:"memory,omitempty"`

	// maxConcurrentRequests is how many requests one worker handles at once; the
	// frontend holds further requests in the pool's queue.
	//
	// +optional
	// +default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxConcurrentRequests int32 `json:"maxConcurrentRequests,omitempty"`

	// queue bounds the requests waiting for a worker (HTTP.sys's request queue).
	//
	// +optional
	// +default={}
	Queue Queue `json:"queue,omitzero"`

	// healthCheck is how workers are watched: the HTTP check each must pass
	// to receive traffic, the ping that restarts a hung one, and its start
	// and stop time limits.
	//
	// +optional
	// +default={}
	HealthCheck HealthCheck `json:"healthCheck,omitzero"`

	// rapidFailProtection stops the pool when its workers fail too often.
	//
	// +optional
	// +default={}
	RapidFailProtection RapidFailProtection `json:"rapidFailProtection,omitzero"`

	// cpuLimit watches the pool's CPU use; unset means no CPU monitoring (the IIS default).
	//
	// +optional
	CPULimit CPULimit `json:"cpuLimit,omitzero"`

	// idle scales the pool to zero when it gets no requests and starts it on demand.
	//
	// +optional
	// +default={}
	Idle Idle `json:"idle,omitzero"`

	// recycling replaces workers one at a time (IIS worker process
	// recycling): after a time, after a number of requests, over a memory
	// limit, or at scheduled times of day. The replacement is Ready before the
	// old worker stops taking requests.
	//
	// +optional
	// +default={}
	Recycling Recycling `json:"recycling,omitzero"`

	// autoscaling sizes the pool from measured cycles per request; when set, it
	// replaces replicas.
	//
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// identity is who the pool's workers are to the Kubernetes API: each
	// pool's workers run as a ServiceAccount of their own ("<pool>-pool"),
	// which an administrator may grant rights through RBAC.
	//
	// +optional
	// +default={}
	Identity PoolIdentity `json:"identity,omitzero"`

	// rollout is how an update replaces the pool's workers. The default
	// starts a new worker before it stops an old one, which needs room on the
	// nodes for one more worker; on nodes with no such room, maxSurge 0 and
	// maxUnavailable 1 update the workers in place, one at a time.
	//
	// +optional
	// +default={}
	Rollout Rollout `json:"rollout,omitzero"`

	// placement says where the pool's workers run. Unset, they spread over
	// nodes and zones.
	//
	// +optional
	Placement Placement `json:"placement,omitzero"`
}

// PoolIdentity is the workers' identity.
type PoolIdentity struct {
	// mountAPIToken mounts the ServiceAccount's API token into the workers,
	// for an application that calls the Kubernetes API; by default none is
	// mounted.
	//
	// +optional
	// +default=false
	MountAPIToken *bool `json:"mountAPIToken,omitempty"`
}

// Rollout bounds how many workers a rolling update adds and stops at a time.
//
// +kubebuilder:validation:XValidation:rule="(has(self.maxSurge) ? self.maxSurge : 1) + (has(self.maxUnavailable) ? self.maxUnavailable : 0) >= 1",message="maxSurge and maxUnavailable cannot both be 0: the update could not start"
type Rollout struct {
	// maxSurge is how many workers above the pool's count an update may start.
	//
	// +optional
	// +default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxSurge *int32 `json:"maxSurge,omitempty"`

	// maxUnavailable is how many workers an update may stop before their
	// replacements are Ready.
	//
	// +optional
	// +default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// Content is where nginx's static files come from; exactly one source is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.image), has(self.persistentVolumeClaim)].filter(x, x).size() == 1",message="content needs exactly one of configMap, image or persistentVolumeClaim"
type Content struct {
	// configMap whose keys are file names and values the files' contents.
	//
	// +optional
	ConfigMap ConfigMapContent `json:"configMap,omitzero"`

	// image is a container image holding the files; they are copied into the pod
	// when it starts (the image needs a "cp" command).
	//
	// +optional
	Image ImageContent `json:"image,omitzero"`

	// persistentVolumeClaim holding the files, mounted read-only.
	//
	// +optional
	PersistentVolumeClaim PersistentVolumeClaimContent `json:"persistentVolumeClaim,omitzero"`

	// defaultDocuments are the files a folder's URL serves, the first that
	// exists (IIS default documents), at most 8; a route's own replace them.
	//
	// +optional
	// +default=["index.html","index.htm"]
	DefaultDocuments DefaultDocuments `json:"defaultDocuments,omitempty"`
}

// ConfigMapContent names a ConfigMap in the pool's namespace.
type ConfigMapContent struct {
	// name of the ConfigMap.
	//
	// +required
	Name ObjectName `json:"name,omitempty"`
}

// ImageContent is a container image holding static files.
type ImageContent struct {
	// reference of the image, for example "registry.example.com/site:1.4".
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`
	Reference string `json:"reference,omitempty"`

	// path of the files inside the image.
	//
	// +optional
	// +default="/content"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/-]*$`
	Path string `json:"path,omitempty"`
}

// PersistentVolumeClaimContent names a claim in the pool's namespace.
type PersistentVolumeClaimContent struct {
	// claimName is the PersistentVolumeClaim's name.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ClaimName string `json:"claimName,omitempty"`
}

// AppProtocol is how nginx talks to the application container.
//
// +kubebuilder:validation:Enum=HTTP;HTTP2;GRPC
type AppProtocol string

const (
	// AppProtocolHTTP is HTTP/1.1.
	AppProtocolHTTP AppProtocol = "HTTP"
	// AppProtocolHTTP2 is HTTP/2 without TLS (h2c, prior knowledge).
	AppProtocolHTTP2 AppProtocol = "HTTP2"
	// AppProtocolGRPC is gRPC (HTTP/2 without TLS); the app answers the gRPC
	// health checking protocol.
	AppProtocolGRPC AppProtocol = "GRPC"
)

// AppContainer is the application each worker pod runs beside nginx.
//
// +kubebuilder:validation:XValidation:rule="!has(self.protocol) || self.protocol == 'HTTP' || self.port != 8084",message="app port may not be 8084 with protocol HTTP2 or GRPC: nginx listens there for HTTP/2"
type AppContainer struct {
	// image of the application, for example "registry.example.com/shop:2.1".
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`
	Image string `json:"image,omitempty"`

	// port the application listens on inside the pod (not 8080 or 8081, which nginx uses).
	//
	// +required
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self != 8080 && self != 8081",message="app port may not be 8080 or 8081: nginx listens there"
	Port int32 `json:"port,omitempty"`

	// protocol the application speaks on its port: HTTP (HTTP/1.1), HTTP2
	// (HTTP/2 without TLS) or GRPC (gRPC without TLS, ready when it answers
	// the gRPC health checking protocol). With HTTP2 and GRPC the frontend
	// carries each request to the worker as an HTTP/2 stream. Such a pool
	// does not start on demand (idle.onDemandStart false).
	//
	// +optional
	// +default="HTTP"
	Protocol AppProtocol `json:"protocol,omitempty"`

	// args are passed to the application's entry point.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Args []string `json:"args,omitempty"`

	// env are environment variables of the application: plain values, or
	// keys of Secrets and ConfigMaps in the pool's namespace, which the
	// kubelet reads (the operator reads no Secret).
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`

	// volumes are Secrets, ConfigMaps and PersistentVolumeClaims of the
	// pool's namespace mounted into the application container, read-only
	// unless a claim says otherwise. The kubelet mounts them by name: the
	// operator reads no Secret.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(v, self.exists_one(w, w.mountPath == v.mountPath))",message="two volumes may not have the same mountPath"
	Volumes []AppVolume `json:"volumes,omitempty"`
}

// AppVolume mounts one Secret, ConfigMap or PersistentVolumeClaim into the
// application container.
//
// +kubebuilder:validation:XValidation:rule="[has(self.secret), has(self.configMap), has(self.persistentVolumeClaim)].filter(x, x).size() == 1",message="a volume needs exactly one of secret, configMap or persistentVolumeClaim"
// +kubebuilder:validation:XValidation:rule="!has(self.readOnly) || self.readOnly || has(self.persistentVolumeClaim)",message="readOnly may be false only for a persistentVolumeClaim: Secrets and ConfigMaps are always mounted read-only"
type AppVolume struct {
	// name of the volume, unique within the pool (the pod's volume is
	// "app-<name>").
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=59
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a volume name must be a DNS label: lowercase letters, digits and dashes, starting and ending with a letter or digit"
	Name string `json:"name,omitempty"`

	// mountPath is the absolute path in the application container where the
	// volume's files appear (a Secret's or ConfigMap's keys as file names).
	// It may not be /tmp (the application's writable folder), the API
	// token's folder, the kubelet's /etc/hosts, /etc/hostname and
	// /etc/resolv.conf, or /dev, /proc and /sys, nor lie inside or above one
	// of them.
	//
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="mountPath must be an absolute path (start with /)"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._/-]*$')",message="mountPath may hold only letters, digits, '.', '_', '-' and '/'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)')",message="mountPath may not have '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule="!self.contains('//') && !self.endsWith('/')",message="mountPath may not hold an empty segment or end with /"
	// +kubebuilder:validation:XValidation:rule="!['/tmp', '/dev', '/proc', '/sys', '/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/var/run/secrets/kubernetes.io/serviceaccount', '/run/secrets/kubernetes.io/serviceaccount'].exists(p, self == p || self.startsWith(p + '/') || p.startsWith(self + '/'))",message="mountPath may not be, lie inside or contain a path the pod mounts itself: /tmp, /dev, /proc, /sys, /etc/hosts, /etc/hostname, /etc/resolv.conf, /var/run/secrets/kubernetes.io/serviceaccount"
	MountPath string `json:"mountPath,omitempty"`

	// readOnly mounts the volume read-only; only a persistentVolumeClaim may
	// be mounted writable (false).
	//
	// +optional
	// +default=true
	ReadOnly *bool `json:"readOnly,omitempty"`

	// secret mounts a Secret's keys as files.
	//
	// +optional
	Secret SecretVolume `json:"secret,omitzero"`

	// configMap mounts a ConfigMap's keys as files.
	//
	// +optional
	ConfigMap ConfigMapVolume `json:"configMap,omitzero"`

	// persistentVolumeClaim mounts a claim.
	//
	// +optional
	PersistentVolumeClaim PersistentVolumeClaimContent `json:"persistentVolumeClaim,omitzero"`
}

// SecretVolume names a Secret in the pool's namespace.
type SecretVolume struct {
	// name of the Secret.
	//
	// +required
	Name SecretName `json:"name,omitempty"`

	// optional lets the application start while the Secret does not exist
	// (the folder is then empty). Otherwise the worker waits for it in
	// ContainerCreating: the operator cannot see that the Secret is
	// missing, the pool stays Progressing and then says RolloutStalled.
	//
	// +optional
	// +default=false
	Optional *bool `json:"optional,omitempty"`
}

// ConfigMapVolume names a ConfigMap in the pool's namespace.
type ConfigMapVolume struct {
	// name of the ConfigMap.
	//
	// +required
	Name ObjectName `json:"name,omitempty"`

	// optional lets the application start while the ConfigMap does not
	// exist (the folder is then empty); otherwise a new pool waits for it
	// and says InvalidReference.
	//
	// +optional
	// +default=false
	Optional *bool `json:"optional,omitempty"`
}

// EnvVar is an environment variable: a value, or a key of a Secret or a
// ConfigMap.
//
// +kubebuilder:validation:XValidation:rule="!has(self.valueFrom) || !has(self.value) || size(self.value) == 0",message="set value or valueFrom, not both"
type EnvVar struct {
	// name of the variable.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name,omitempty"`
	// value of the variable.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
	// valueFrom takes the value from a key of a Secret or a ConfigMap.
	//
	// +optional
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource names one key of a Secret or a ConfigMap.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretKeyRef) != has(self.configMapKeyRef)",message="set exactly one of secretKeyRef and configMapKeyRef"
type EnvVarSource struct {
	// secretKeyRef is a key of a Secret in the pool's namespace.
	//
	// +optional
	SecretKeyRef KeyRef `json:"secretKeyRef,omitzero"`
	// configMapKeyRef is a key of a ConfigMap in the pool's namespace.
	//
	// +optional
	ConfigMapKeyRef KeyRef `json:"configMapKeyRef,omitzero"`
}

// KeyRef is a key of an object in the pool's namespace.
type KeyRef struct {
	// name of the Secret or ConfigMap.
	//
	// +required
	Name ObjectName `json:"name,omitempty"`
	// key in its data.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
	// optional lets the application start without the object or the key
	// (the variable is then unset); otherwise the worker waits for them and
	// the pool says ContainerCannotStart.
	//
	// +optional
	// +default=false
	Optional *bool `json:"optional,omitempty"`
}

// Queue is the pool's request queue (IIS AppPoolQueueLength).
type Queue struct {
	// length is how many requests may wait for a worker before further requests
	// are answered 503 at once (IIS AppPoolQueueLength, 1000; IIS Manager accepts 10-65535).
	//
	// +optional
	// +default=1000
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=65535
	Length int32 `json:"length,omitempty"`

	// timeout answers 503 to a request that waited this long for a worker. Unset
	// means a request waits until the frontend's requestTimeout.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('100ms') && duration(self) <= duration('1h'))",message="queue timeout must be between 100ms and 1h"
	Timeout Duration `json:"timeout,omitempty"`
}

// HealthCheck is how the operator and the kubelet watch a pool's workers, as
// IIS health monitoring does (the Health tab of an IIS application pool):
// a check that decides which workers receive traffic, a ping that restarts
// a hung worker, and limits on how long a worker may take to start and to
// stop.
type HealthCheck struct {
	// path requested on the worker, by the check and by the ping. A new pool
	// of ConfigMap content alone waits until the ConfigMap has the file it
	// names (index.html or index.htm for "/").
	//
	// +optional
	// +default="/"
	Path PathPrefix `json:"path,omitempty"`

	// interval between checks of whether a worker receives traffic.
	//
	// +optional
	// +default="30s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="healthCheck interval must be between 1s and 1h"
	Interval Duration `json:"interval,omitempty"`

	// timeout of one check.
	//
	// +optional
	// +default="5s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('5m'))",message="healthCheck timeout must be between 1s and 5m"
	Timeout Duration `json:"timeout,omitempty"`

	// failureThreshold is how many checks in a row must fail before the worker
	// stops receiving traffic.
	//
	// +optional
	// +default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`

	// pingingEnabled pings each worker's application (IIS PingingEnabled):
	// a worker that does not answer a ping within pingResponseTime is hung,
	// and the kubelet restarts it. false turns pinging off: a hung worker
	// only leaves rotation.
	//
	// +optional
	// +default=true
	PingingEnabled *bool `json:"pingingEnabled,omitempty"`

	// pingInterval is the time between pings (IIS PingInterval, 30 s).
	//
	// +optional
	// +default="30s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="healthCheck pingInterval must be between 1s and 1h"
	PingInterval Duration `json:"pingInterval,omitempty"`

	// pingResponseTime is how long a worker has to answer a ping before it
	// is restarted (IIS PingResponseTime, 90 s). A hung worker is restarted
	// within pingInterval + pingResponseTime.
	//
	// +optional
	// +default="90s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('10m'))",message="healthCheck pingResponseTime must be between 1s and 10m"
	PingResponseTime Duration `json:"pingResponseTime,omitempty"`

	// startupTimeLimit is how long a new worker has to answer its first
	// ping (IIS StartupTimeLimit, 90 s): pings do not count before, and a
	// worker that is not up by then is restarted.
	//
	// +optional
	// +default="90s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="healthCheck startupTimeLimit must be between 1s and 1h"
	StartupTimeLimit Duration `json:"startupTimeLimit,omitempty"`

	// shutdownTimeLimit is how long a leaving worker has to drain and stop
	// (IIS ShutdownTimeLimit, 90 s): it serves on for a 10 s drain pause
	// while the frontends forget it, then finishes the requests it has, and
	// what still runs at the limit is killed.
	//
	// +optional
	// +default="90s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="healthCheck shutdownTimeLimit must be between 1s and 1h"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || duration(self) > duration('10s')",message="healthCheck shutdownTimeLimit must be longer than the 10s drain pause a leaving worker keeps serving for"
	ShutdownTimeLimit Duration `json:"shutdownTimeLimit,omitempty"`
}

// RapidFailProtection stops a pool whose workers fail maxFailures times within
// interval (IIS rapid-fail protection: 5 failures in 5 minutes).
type RapidFailProtection struct {
	// enabled turns the protection on.
	//
	// +optional
	// +default=true
	Enabled *bool `json:"enabled,omitempty"`

	// maxFailures within Interval stop the pool (IIS RapidFailProtectionMaxCrashes).
	//
	// +optional
	// +default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxFailures int32 `json:"maxFailures,omitempty"`

	// interval over which failures are counted (IIS RapidFailProtectionInterval).
	//
	// +optional
	// +default="5m"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('10s') && duration(self) <= duration('24h'))",message="rapidFailProtection interval must be between 10s and 24h"
	Interval Duration `json:"interval,omitempty"`
}

// CPULimit is the IIS CPU monitor: a pool whose CPU use stays over Percent of
// its CPU for Interval takes Action.
type CPULimit struct {
	// percent of the pool's CPU (replicas x cpu) that counts as over the limit.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent,omitempty"`

	// interval the pool must stay over the limit (IIS CPUResetInterval, 5 minutes).
	//
	// +optional
	// +default="5m"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('10s') && duration(self) <= duration('24h'))",message="cpuLimit interval must be between 10s and 24h"
	Interval Duration `json:"interval,omitempty"`

	// action when over the limit: Report, Throttle or Shutdown.
	//
	// +optional
	// +default="Report"
	Action CPULimitAction `json:"action,omitempty"`
}

// Idle is the IIS idle timeout and on-demand start.
type Idle struct {
	// timeout scales the pool to zero after this long without requests (IIS
	// IdleTimeout, 20 minutes); "0s" keeps it running.
	//
	// +optional
	// +default="20m"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) == duration('0s') || (duration(self) >= duration('1m') && duration(self) <= duration('720h')))",message="idle timeout must be 0s (off) or between 1m and 720h"
	Timeout Duration `json:"timeout,omitempty"`

	// onDemandStart starts an idle pool when a request for it arrives; without
	// it an idle pool answers per the farm's unavailableResponse.
	//
	// +optional
	// +default=true
	OnDemandStart *bool `json:"onDemandStart,omitempty"`
}

// Recycling restarts the pool's workers one at a time (IIS worker process recycling).
type Recycling struct {
	// interval restarts every worker after this long (IIS PeriodicRestartTime,
	// 1740 minutes); "0s" turns periodic recycling off.
	//
	// +optional
	// +default="29h"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) == duration('0s') || duration(self) >= duration('10m'))",message="recycling interval must be 0s (off) or at least 10m"
	Interval Duration `json:"interval,omitempty"`

	// requests restarts a worker after it served this many requests
	// (IIS PeriodicRestartRequests). Unset: no request limit.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1000
	Requests int64 `json:"requests,omitempty"`

	// memory restarts a worker whose memory use exceeds this (IIS
	// PeriodicRestartPrivateMemory). Unset: no memory limit besides the pod's.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('1Ti')) <= 0)",message="recycling memory must be between 1Mi and 1Ti"
	Memory *resource.Quantity `json:"memory,omitempty"`

	// schedule recycles every worker at these times of day (IIS
	// PeriodicRestartSchedule).
	//
	// +optional
	Schedule RecycleSchedule `json:"schedule,omitzero"`
}

// RecycleSchedule is when in the day the workers are recycled.
//
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.times)",message="a recycling schedule's timeZone needs times"
type RecycleSchedule struct {
	// times are times of day, "HH:MM" on a 24-hour clock, in timeZone.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=24
	// +kubebuilder:validation:items:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	// +kubebuilder:validation:items:MaxLength=5
	Times []string `json:"times,omitempty"`

	// timeZone is the IANA time zone the times are in, for example
	// "Europe/Berlin"; UTC when unset.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$`
	TimeZone string `json:"timeZone,omitempty"`
}

// RecycleReason is why a worker was recycled.
//
// +kubebuilder:validation:Enum=Memory;Requests;Schedule;Interval
type RecycleReason string

// The reasons a worker is recycled, in the order they are checked.
const (
	RecycleReasonMemory   RecycleReason = "Memory"
	RecycleReasonRequests RecycleReason = "Requests"
	RecycleReasonSchedule RecycleReason = "Schedule"
	RecycleReasonInterval RecycleReason = "Interval"
)

// Recycle is the latest recycle of a worker for one reason.
type Recycle struct {
	// reason is why the worker was recycled.
	//
	// +required
	Reason RecycleReason `json:"reason,omitempty"`

	// time is when its replacement was asked for.
	//
	// +required
	Time metav1.Time `json:"time,omitzero"`

	// worker is the pod that was recycled.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Worker string `json:"worker,omitempty"`

	// message says what crossed which limit.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// inARow counts the quick recycles for this reason (of workers that had
	// run less than two minutes) that each followed the one before within
	// ten minutes; at twice the pool's workers, recycling for memory or
	// requests pauses for ten minutes and the pool reports a loop.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	InARow int32 `json:"inARow,omitempty"`
}

// Autoscaling sizes a pool from measured cycles per request (IIS capacity planning).
//
// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="minReplicas must be less than or equal to maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.fallbackReplicas) || (self.fallbackReplicas >= self.minReplicas && self.fallbackReplicas <= self.maxReplicas)",message="fallbackReplicas must be between minReplicas and maxReplicas"
type Autoscaling struct {
	// minReplicas is the fewest workers the autoscaler keeps (idle shutdown may still go to zero).
	//
	// +optional
	// +default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most workers the autoscaler starts.
	//
	// +optional
	// +default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxReplicas int32 `json:"maxReplicas,omitempty"`

	// targetCPUUtilizationPercent is the share of the pool's cycles the expected
	// load may use (the capacity-planning policy of 30 %). A pool without
	// autoscaling is planned at the default, 30 %.
	//
	// +optional
	// +default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercent int32 `json:"targetCPUUtilizationPercent,omitempty"`

	// forecastRequestsPerSecond is the load to plan for when it exceeds the
	// measured load (for example an announced peak).
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	ForecastRequestsPerSecond *int32 `json:"forecastRequestsPerSecond,omitempty"`

	// stabilizationWindow is how long the recommendation must stay lower before
	// the pool scales down.
	//
	// +optional
	// +default="300s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) <= duration('24h'))",message="stabilizationWindow must be at most 24h"
	StabilizationWindow Duration `json:"stabilizationWindow,omitempty"`

	// fallbackReplicas is used while metrics are unavailable (never below the
	// current count); unset holds the current count.
	//
	// +optional
	FallbackReplicas *int32 `json:"fallbackReplicas,omitempty"`
}

// Capacity is what the autoscaler measured and decided, for every pool it
// measures: an autoscaled pool follows the recommendation, a pool of fixed
// replicas gets it as a report (its replicas do not change).
type Capacity struct {
	// requestsPerSecond served by the pool.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	RequestsPerSecond string `json:"requestsPerSecond,omitempty"`
	// cpuCores used by the pool's workers (core-seconds per second).
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	CPUCores string `json:"cpuCores,omitempty"`
	// megacyclesPerRequest is CPU cycles per request, in millions.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	MegacyclesPerRequest string `json:"megacyclesPerRequest,omitempty"`
	// requiredMegahertz is the cycles per second the load needs at the target
	// utilisation (autoscaling.targetCPUUtilizationPercent, or 30 % for a pool
	// without autoscaling).
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	RequiredMegahertz string `json:"requiredMegahertz,omitempty"`
	// recommendedReplicas is the autoscaler's latest recommendation; for a
	// pool without autoscaling it is a report: replicas still sets the workers.
	//
	// +optional
	RecommendedReplicas *int32 `json:"recommendedReplicas,omitempty"`
	// lastScaleTime is when the autoscaler last changed the replicas.
	//
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// lastScaleReason says why.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	LastScaleReason string `json:"lastScaleReason,omitempty"`
}

// QueueStatus is the pool's request queue as the frontend enforces it.
type QueueStatus struct {
	// concurrency is how many requests the ready workers take at once
	// (ready workers x maxConcurrentRequests).
	//
	// +optional
	Concurrency int32 `json:"concurrency"`

	// length is how many more requests may wait for a worker.
	//
	// +optional
	Length int32 `json:"length"`

	// rejected counts the requests answered 503 because the queue was full,
	// as the operator read them from the frontends' counters.
	//
	// +optional
	Rejected int64 `json:"rejected"`

	// timedOut counts the requests answered 503 because they waited longer
	// than queue.timeout, as the operator read them from the frontends'
	// counters.
	//
	// +optional
	TimedOut int64 `json:"timedOut"`

	// lastRejectionTime is when the operator last saw a request refused,
	// for a full queue or a timeout.
	//
	// +optional
	LastRejectionTime *metav1.Time `json:"lastRejectionTime,omitempty"`
}

// AppPoolStatus is the observed state of an application pool.
type AppPoolStatus struct {
	// conditions are Ready, Degraded, Stopped (health monitoring keeps the
	// pool stopped), CPULimitExceeded, MetricsAvailable (whether the
	// autoscaler could measure the pool, and what the figures need) and
	// Paused.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Pending, Running, Degraded, Stopped or Idle.
	//
	// +optional
	Phase PoolPhase `json:"phase,omitempty"`

	// replicas is the desired number of workers.
	//
	// +optional
	Replicas int32 `json:"replicas"`

	// readyReplicas is the number of workers passing their health check.
	//
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// ready is "ready/desired", as kubectl shows for Deployments.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Ready string `json:"ready,omitempty"`

	// selector is the label selector of the pool's worker pods, for the scale
	// subresource (kubectl scale, autoscalers).
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Selector string `json:"selector,omitempty"`

	// idleSince is when the pool went idle (no requests for idle.timeout):
	// it has no workers until a request starts it.
	//
	// +optional
	IdleSince *metav1.Time `json:"idleSince,omitempty"`

	// capacity is the autoscaler's measurement and recommendation, for
	// autoscaled pools and, as a report, for pools of fixed replicas.
	//
	// +optional
	Capacity Capacity `json:"capacity,omitzero"`

	// queue is what the pool's request queue holds and did.
	//
	// +optional
	Queue QueueStatus `json:"queue,omitzero"`

	// recentFailures is how many worker failures (crashes, exits, failed
	// health checks) rapid-fail protection counts within its interval.
	//
	// +optional
	RecentFailures int32 `json:"recentFailures"`

	// recentFailureTimes are when the failures rapid-fail protection counts
	// happened (the latest 100 within its interval), so that a new leader
	// of the operator counts them too.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RecentFailureTimes []metav1.MicroTime `json:"recentFailureTimes,omitempty"`

	// lastFailure describes the latest worker failure.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	LastFailure string `json:"lastFailure,omitempty"`

	// lastRecycles is the latest recycle per reason.
	//
	// +optional
	// +listType=map
	// +listMapKey=reason
	// +kubebuilder:validation:MaxItems=4
	LastRecycles []Recycle `json:"lastRecycles,omitempty"`

	// observedRestart is the value of the webfarm.dev/restart annotation the
	// operator last acted on.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	ObservedRestart string `json:"observedRestart,omitempty"`
}

// AppPool is a group of identical nginx workers serving one or more routes of
// web farms (an IIS application pool).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ap;pool,categories=web
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Req/s",type=string,JSONPath=`.status.capacity.requestsPerSecond`
// +kubebuilder:printcolumn:name="Mcycles/Req",type=string,JSONPath=`.status.capacity.megacyclesPerRequest`
// +kubebuilder:printcolumn:name="Recommended",type=integer,JSONPath=`.status.capacity.recommendedReplicas`,priority=1
// +kubebuilder:printcolumn:name="Rejected",type=integer,JSONPath=`.status.queue.rejected`,priority=1
// +kubebuilder:printcolumn:name="Timed Out",type=integer,JSONPath=`.status.queue.timedOut`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="an AppPool name may be at most 50 characters (its children add a suffix)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="an AppPool name must be a DNS label (lowercase letters, digits and dashes, no dots): routes name it and its Service is named after it"
type AppPool struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's name, namespace, labels and annotations.
	//
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	//
	// +required
	Spec AppPoolSpec `json:"spec,omitzero"`

	// status is the observed state, written by the operator.
	//
	// +optional
	Status AppPoolStatus `json:"status,omitzero"`
}

// AppPoolList is a list of AppPools.
//
// +kubebuilder:object:root=true
type AppPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppPool `json:"items"`
}

func init() { SchemeBuilder.Register(&AppPool{}, &AppPoolList{}) }
