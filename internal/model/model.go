// Package model resolves WebFarm, AppPool and CachePolicy resources into one
// internal model with every default applied and every value parsed. Renderers
// (internal/render/...) read only this model, never the API types, so each
// value that reaches a config file has been validated here once.
package model

import (
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// QueuedAtHeader carries when a request reached the frontend (milliseconds
// since the epoch) to a pool with a queue timeout: the Envoy frontend sets it
// (overwriting any a client sent), and the worker's nginx refuses a request
// that waited too long.
const QueuedAtHeader = "X-Webfarm-Queued-At"

// ActivateHeader names the pool ("namespace/name") of a request the
// frontend sends to the operator's activator (a pool without a ready worker
// that starts on demand); the frontend sets it, replacing any a client sent.
const ActivateHeader = "X-Webfarm-Activate"

// UnavailableResponseHeader tells the activator how the farm answers for a
// pool that cannot serve ("L7" or "L4", the WebFarm's unavailableResponse):
// the frontend sets it on the requests it sends there, replacing any a
// client sent. With L4 the activator closes the connection without an
// answer where it would answer 503, and the frontend resets its client's.
const UnavailableResponseHeader = "X-Webfarm-Unavailable-Response"

// Values of UnavailableResponseHeader, as the WebFarm API spells them.
const (
	UnavailableL7 = "L7"
	UnavailableL4 = "L4"
)

// QueueTimeoutStatus is the status a worker answers a request that waited
// past its pool's queue timeout; the frontend answers the client 503 in its
// place. Never sent to clients, so an application's own 503s stay apart in
// the frontend's counters.
const QueueTimeoutStatus = 599

// LongestFrontendTimeout is the API's bound of the frontend's
// requestTimeout and webSocketIdleTimeout. A pool's workers may serve several
// farms, so they wait on their application this long and leave the cut to
// the frontend, whose timeouts are the farm's.
const LongestFrontendTimeout = time.Hour

// Images are the container images the operator deploys; they come from the
// operator's flags, never from a custom resource.
type Images struct {
	Envoy string
	Nginx string
	// CacheAgent is the operator's own image: its binary is also the agent
	// beside each cache tier's nginx ("manager cache-agent").
	CacheAgent string
	// PullPolicy applies to every generated container ("IfNotPresent" by default).
	PullPolicy string
}

// Platform is what the operator knows about where it runs.
type Platform struct {
	Images Images
	// XDSHost and XDSPort are where Envoy frontends fetch their configuration.
	XDSHost string
	XDSPort int32
	// ActivatorPort is the operator's activator on XDSHost: where the
	// frontends send requests for a pool without a ready worker that starts
	// on demand (0: no activator; such requests get 503 at once).
	ActivatorPort int32
	// ActivationTimeout bounds how long the activator holds a request while
	// its pool starts.
	ActivationTimeout time.Duration
	// Isolation, when set, gives every pool and cache tier a NetworkPolicy
	// that admits only the workloads that send it requests (nil: none).
	Isolation *Isolation
	// ControlTLS: the frontends reach the xDS server and the activator over
	// mutual TLS, proving their farm with the identity Secret they mount
	// (vocabulary.FrontendIdentityName). The operator always sets it; the
	// renderer's tests on loopback may not.
	ControlTLS bool
}

// Isolation is what a pool's or cache tier's NetworkPolicy admits besides
// its own farms' frontends and cache tiers: the operator's pods (the
// activator forwards to workers, the collectors read cache agents). They are
// selected by namespace name and pod labels, which only whoever may create
// pods in the operator's namespace can put on a pod.
type Isolation struct {
	OperatorNamespace string
	OperatorPodLabels map[string]string
}

// Farm is a resolved WebFarm.
type Farm struct {
	Name      string
	Namespace string
	UID       string

	Sites    []Site // sorted by name
	Frontend Frontend
	Affinity Affinity
	// RejectWithReset: answer unavailable pools with a connection reset (L4)
	// rather than HTTP 503 (L7).
	RejectWithReset bool

	// Pools are the distinct AppPool names the routes use, sorted.
	Pools []string
	// CachePolicies are the distinct CachePolicy names the routes use, sorted.
	CachePolicies []string

	// GatewayListeners are the HTTPS listeners of the Gateways the farm
	// serves, in their Gateways' order: each a certificate for a server
	// name, over the sites of the routes attached to them.
	GatewayListeners []TLSListener

	Platform Platform
}

// TLSListener is a Gateway's HTTPS listener as the frontend serves it.
type TLSListener struct {
	// Name identifies it in the farm: "<gateway>/<listener>".
	Name string
	// ServerName is the host name it serves ("*.example.com" covers one
	// label); empty: any server name that no other certificate serves.
	ServerName string
	// SecretName is its certificate's kubernetes.io/tls Secret, in the
	// farm's namespace.
	SecretName string
}

// Certificate is a Secret the frontend pods mount, and its name there.
type Certificate struct {
	// Name names its mount and its SDS resource in Envoy (and so its
	// stats): an inline site's name, or GatewayCertificateName's.
	Name       string
	SecretName string
}

// GatewayCertificateName is the name of a Gateway listener's Secret in the
// frontend. Site names are DNS labels and Secret names have no "_": the
// underscores keep the two apart. It has no dot: Envoy reads a dot in a
// stat's name as the end of the name's tag (cert_<name> in sds.* stats).
func GatewayCertificateName(secret string) string {
	return "gateway_" + strings.ReplaceAll(secret, ".", "_")
}

// Certificates are the Secrets the frontend serves: each inline HTTPS
// site's, then each Gateway listener's Secret once, in listener order.
func (f Farm) Certificates() []Certificate {
	var out []Certificate
	for _, s := range f.Sites {
		if s.TLS != nil && s.TLS.SecretName != "" {
			out = append(out, Certificate{Name: s.Name, SecretName: s.TLS.SecretName})
		}
	}
	seen := map[string]bool{}
	for _, l := range f.GatewayListeners {
		if !seen[l.SecretName] {
			seen[l.SecretName] = true
			out = append(out, Certificate{Name: GatewayCertificateName(l.SecretName), SecretName: l.SecretName})
		}
	}
	return out
}

// ServesHTTPS: the frontend has an HTTPS listener (a certificate to serve).
func (f Farm) ServesHTTPS() bool { return len(f.Certificates()) > 0 }

// Site is a resolved site: hosts sorted, routes longest prefix first.
type Site struct {
	Name  string
	Hosts []string
	// Routes in match order: longest path prefix first, then by prefix.
	Routes []Route
	// MaxBandwidthBytesPerSecond is 0 when unlimited.
	MaxBandwidthBytesPerSecond int64
	// MaxConnections bounds the site's HTTPS connections per replica (0:
	// unbounded); each of its filter chains counts its own.
	MaxConnections uint32
	// TLS is nil for a plain HTTP site.
	TLS *SiteTLS
}

// SiteTLS is a site's HTTPS.
type SiteTLS struct {
	// SecretName is the kubernetes.io/tls Secret the frontend pods mount
	// for the site's hosts; empty for a Gateway route's site, which the
	// certificate of its listener (Farm.GatewayListeners) serves.
	SecretName string
	// ServePlainHTTP serves plain HTTP too; false redirects it to HTTPS.
	ServePlainHTTP bool
	// HTTPSOnly: plain HTTP does not serve the site at all (a Gateway
	// route attached to HTTPS listeners only), rather than redirecting.
	HTTPSOnly bool
	// HSTSMaxAge is the Strict-Transport-Security max-age (0: no header).
	HSTSMaxAge        time.Duration
	IncludeSubDomains bool
}

// TLSSites are the sites served over HTTPS, by name.
func (f Farm) TLSSites() []Site {
	var out []Site
	for _, s := range f.Sites {
		if s.TLS != nil {
			out = append(out, s)
		}
	}
	return out
}

// Route sends a path prefix to a pool, optionally through a cache tier.
type Route struct {
	PathPrefix  string
	Pool        string
	CachePolicy string // empty: no cache tier

	// Match, set on a route from a Gateway API rule, selects its requests
	// (the path is kept as the client sent it); nil on an inline site's
	// route, whose PathPrefix matches by segments and is taken off.
	Match *Match
	// Backends, set on a Gateway API rule that goes elsewhere than one
	// AppPool (Pool empty): Services, or several backends by weight.
	Backends []Backend
	// Refused: a Gateway API rule none of whose backends resolves; the
	// frontend answers 500, as Gateway API asks.
	Refused bool
	// Filters are a Gateway API rule's changes to its requests and
	// responses (nil: none).
	Filters *Filters
	// Timeout bounds a Gateway API rule's request, retries included, and
	// BackendTimeout each try (0: the farm's requestTimeout; none).
	Timeout, BackendTimeout time.Duration
	// Content is what the route serves of the pool's content; nil: the
	// pool's content root with the pool's default documents and no custom
	// error pages. Inline sites and Gateway API routes fill it alike.
	Content *SiteContent
}

// Filters are what a Gateway API rule's filters do. A Redirect answers the
// rule itself: its backends are not used.
type Filters struct {
	RequestHeaders, ResponseHeaders HeaderChanges
	Redirect                        *Redirect
	Rewrite                         *Rewrite
	// Mirrors get a copy of the rule's requests, their answers ignored.
	Mirrors []Mirror
}

// Mirror is a Service that gets a copy of a share of a rule's requests.
type Mirror struct {
	Service ServiceBackend
	// PerMillion is the share of requests copied, in millionths (1,000,000:
	// every request).
	PerMillion uint32
}

// HeaderChanges set (replace), add (append) and remove headers.
type HeaderChanges struct {
	Set, Add []NameValue
	Remove   []string
}

// Redirect answers with a redirect to the request's URL so changed (empty,
// zero: unchanged).
type Redirect struct {
	Scheme, Hostname string
	Port             int32
	Path             *PathChange
	StatusCode       int32 // 301 or 302
}

// Rewrite changes the host and path a request reaches its backend with.
type Rewrite struct {
	Hostname string
	Path     *PathChange
}

// PathChange replaces the whole path, or the part its rule's prefix matched.
type PathChange struct {
	// Full: Value is the new path; else it replaces the matched prefix.
	Full  bool
	Value string
}

// Match is how a Gateway API rule selects requests. Values were checked by
// Gateway API's schema and internal/gateway before they reach a renderer.
type Match struct {
	// Exact: Path is the whole path; else it is a prefix by whole segments.
	Exact bool
	Path  string
	// Headers must all be present with these exact values (names in
	// lower case).
	Headers []NameValue
	// QueryParams must all be present with these exact values.
	QueryParams []NameValue
	// Method is empty for any method.
	Method string
}

// NameValue is a header or query parameter and its exact value.
type NameValue struct{ Name, Value string }

// Backend is one weighted destination of a Gateway API rule.
type Backend struct {
	// Pool is an AppPool of the farm's namespace.
	Pool string
	// Service is a Service's cluster address and port (Pool empty).
	Service *ServiceBackend
	// Invalid: the backendRef does not resolve; its share of requests
	// gets 500.
	Invalid bool
	Weight  uint32
}

// ServiceBackend is a Service the frontend reaches at its cluster IP.
type ServiceBackend struct {
	Namespace, Name string
	// ClusterIP is where the Service is reached on Port; empty for a
	// headless Service, whose pods are reached by its DNS name on
	// TargetPort.
	ClusterIP  string
	Port       int32
	TargetPort int32
	// H2C: the port speaks HTTP/2 in clear text (appProtocol
	// kubernetes.io/h2c); otherwise HTTP/1.1.
	H2C bool
}

// DNSName is a headless Service's name in the cluster's DNS, which the
// frontend pods' resolver completes with the cluster's domain.
func (s ServiceBackend) DNSName() string { return s.Name + "." + s.Namespace + ".svc" }

// SiteContent is a site's share of its pool's static content (an IIS site's
// physical path, default documents and custom errors). The frontend sends
// it with each request (see the vocabulary's Site*Header), so that
// thousands of sites share one pool's workers, whose configuration stays
// the same whatever the sites.
type SiteContent struct {
	// Directory is relative to the pool's content root ("sites/shop"):
	// segments of ContentSegment, "" for the root itself.
	Directory string
	// DefaultDocuments are tried in order for a folder's URL (empty: the
	// pool's).
	DefaultDocuments []string
	// ErrorPages by status code, sorted by code.
	ErrorPages []ErrorPage
}

// ErrorPage answers one of the errors a worker produces itself with a file
// of the site's directory.
type ErrorPage struct {
	StatusCode int32
	// Path is absolute within the site's directory ("/errors/404.html").
	Path string
}

// Autoscaling is a pool's resolved autoscaling settings.
type Autoscaling struct {
	MinReplicas, MaxReplicas  int32
	TargetUtilization         float64 // (0, 1]
	ForecastRequestsPerSecond float64 // 0: none
	StabilizationWindow       time.Duration
	FallbackReplicas          *int32 // nil: hold the current count
}

// Frontend is the resolved Envoy frontend.
type Frontend struct {
	Replicas    int32
	ServiceType string
	Port        int32
	NodePort    int32 // 0: chosen by Kubernetes
	// HTTPSPort is the Service's HTTPS port, open when a site has TLS.
	HTTPSPort int32
	// TLSMinVersion is "1.2" or "1.3".
	TLSMinVersion string
	// DefaultTLSSite names the site whose certificate a client without SNI
	// gets (empty when no site has TLS).
	DefaultTLSSite    string
	ConnectionTimeout time.Duration
	RequestTimeout    time.Duration
	// WebSocketIdleTimeout closes a WebSocket idle this long; an open
	// WebSocket is not bounded by RequestTimeout.
	WebSocketIdleTimeout time.Duration
	KeepAlive            bool
	Compression          bool
	// DebugHeaders lets X-Webfarm-Worker and Envoy's Server header reach
	// clients; off, both stay inside the farm.
	DebugHeaders  bool
	CPUMilli      int64
	MemoryBytes   int64
	ClientAddress ClientAddress
	AccessLog     AccessLog
	Service       ServiceExposure
	Placement     Placement
	ClientLimits  ClientLimits
	// Autoscaling: the frontends follow their measured cycles per request
	// (Replicas is then the count they start at); nil: Replicas.
	Autoscaling *Autoscaling
}

// MaxFrontendReplicas is the most frontends a farm runs (frontend.replicas
// and frontend.autoscaling.maxReplicas).
const MaxFrontendReplicas = 100

// ClientLimits bound one client's share of a frontend replica.
type ClientLimits struct {
	RequestHeadersTimeout time.Duration
	RequestBodyTimeout    time.Duration
	MaxRequestHeadersKiB  uint32
	// PerAddress and PerClassC are nil when the farm sets no such limit.
	PerAddress *RequestRate
	PerClassC  *RequestRate
}

// RequestRate is a token bucket refilled with PerSecond tokens a second,
// holding at most Burst.
type RequestRate struct {
	PerSecond uint32
	Burst     uint32
}

// ServiceExposure is how the frontend's Service meets the world beyond the
// cluster.
type ServiceExposure struct {
	// ExternalTrafficPolicy is "Local" or "Cluster" for a NodePort or
	// LoadBalancer Service, empty for ClusterIP.
	ExternalTrafficPolicy string
	// LoadBalancerClass is empty for the cluster's default.
	LoadBalancerClass string
	// Annotations go on the Service (nil: none).
	Annotations map[string]string
	// SourceRanges are the networks a LoadBalancer Service admits (sorted,
	// masked; empty: every client).
	LoadBalancerSourceRanges []netip.Prefix
}

// Placement is where a workload's pods run. Its values were checked when
// resolved: label keys and values, enums, and pod affinity terms that name
// no other namespace.
type Placement struct {
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Affinity     *corev1.Affinity
	// TopologySpreadConstraints as given; empty: the default spread over
	// nodes and zones.
	TopologySpreadConstraints []corev1.TopologySpreadConstraint
	PriorityClassName         string
}

// ClientAddress is how the frontend finds the client's address behind
// proxies; the zero value believes only the connecting address.
type ClientAddress struct {
	// TrustedHops: X-Forwarded-For entries appended by this many proxies
	// (0: none).
	TrustedHops uint32
	// TrustedNetworks: X-Forwarded-For is read past entries within these
	// networks, for requests from them (sorted, masked; empty: none).
	TrustedNetworks []netip.Prefix
	// ProxyProtocol: each connection starts with a PROXY protocol header.
	ProxyProtocol bool
}

// AccessLog is the resolved access log of the frontend.
type AccessLog struct {
	Enabled bool
	// SamplePercent of requests are logged, in [1, 100].
	SamplePercent int32
}

// Session affinity types, as the WebFarm API spells them.
const (
	AffinityNone     = "None"
	AffinityClientIP = "ClientIP"
	AffinityClassC   = "ClassC"
	AffinityCookie   = "Cookie"
)

// Affinity is the resolved session affinity.
type Affinity struct {
	Type       string // AffinityNone, AffinityClientIP, AffinityClassC, AffinityCookie
	CookieName string
	CookieTTL  time.Duration
	// CookieSameSite is "Lax", "Strict" or "None".
	CookieSameSite string
}

// Pool is a resolved AppPool.
type Pool struct {
	Name      string
	Namespace string
	UID       string

	Content Content
	App     *App

	// Replicas the reconciler applies; nil when another writer (the autoscaler)
	// owns the Deployment's replicas.
	Replicas *int32
	// Autoscaling: the pool's workers follow its measured cycles per
	// request; nil: a fixed count.
	Autoscaling *Autoscaling
	// IdleTimeout scales the pool to zero after this long without requests
	// (0: never); OnDemandStart lets a request start an idle pool.
	IdleTimeout   time.Duration
	OnDemandStart bool
	// Idle: the pool went idle and has no workers (runtime state: see
	// WithRuntime).
	Idle bool

	CPUMilli              int64
	MemoryBytes           int64
	MaxConcurrentRequests int32
	QueueLength           int32
	QueueTimeout          time.Duration // 0: none

	// Rollout bounds an update's extra and missing workers.
	Rollout Rollout
	// AdministratorStopped: spec.state is Stopped.
	AdministratorStopped bool
	// MountAPIToken: the workers get their ServiceAccount's API token.
	MountAPIToken bool

	Health    HealthCheck
	RapidFail RapidFail
	// Recycling replaces workers one at a time (see internal/lifecycle).
	Recycling Recycling
	// CPULimit is the CPU monitor's limit; nil: no monitoring.
	CPULimit *CPULimit
	// Stopped: health monitoring stopped the pool: it runs no workers and
	// the frontend answers its routes itself (runtime state: see
	// WithRuntime).
	Stopped bool

	Placement Placement

	Platform Platform
}

// Runtime is where a pool stands, which its spec does not say: decided by
// internal/lifecycle, recorded in the pool's status.
type Runtime struct {
	// Stopped by health monitoring, or Idle after its idle timeout: either
	// way no workers, as a stopped or idle IIS pool has no worker processes.
	Stopped, Idle bool
	// Replicas is the workers to run.
	Replicas int32
}

// WithRuntime is the pool with its runtime state, as the renderers take it.
func (p Pool) WithRuntime(rt Runtime) Pool {
	p.Stopped, p.Idle = rt.Stopped, rt.Idle
	replicas := rt.Replicas
	if rt.Stopped || rt.Idle {
		replicas = 0
	}
	p.Replicas = &replicas
	return p
}

// CPU monitor actions, as the AppPool API spells them.
const (
	CPUReport   = "Report"
	CPUThrottle = "Throttle"
	CPUShutdown = "Shutdown"
)

// CPULimit is the resolved CPU monitor limit.
type CPULimit struct {
	Percent  int32
	Interval time.Duration
	Action   string // CPUReport, CPUThrottle or CPUShutdown
}

// RapidFail is the resolved rapid-fail protection.
type RapidFail struct {
	Enabled     bool
	MaxFailures int32
	Interval    time.Duration
}

// ContentSource says where static files come from.
type ContentSource string

const (
	ContentNone      ContentSource = ""
	ContentConfigMap ContentSource = "ConfigMap"
	ContentImage     ContentSource = "Image"
	ContentClaim     ContentSource = "PersistentVolumeClaim"
)

// Content is the resolved static-content source.
type Content struct {
	Source ContentSource
	// Name is the ConfigMap or PersistentVolumeClaim name, or the image reference.
	Name string
	// ImagePath is the folder inside the image that holds the files.
	ImagePath string
	// DefaultDocuments are tried in order for a folder's URL, unless a
	// site names its own.
	DefaultDocuments []string
}

// App is the resolved application container.
type App struct {
	Image    string
	Port     int32
	Protocol AppProtocol
	Args     []string
	Env      []EnvVar // sorted by name
	Volumes  []Volume // sorted by name
}

// VolumeKind is what an app's volume mounts.
type VolumeKind string

const (
	VolumeSecret    VolumeKind = "Secret"
	VolumeConfigMap VolumeKind = "ConfigMap"
	VolumeClaim     VolumeKind = "PersistentVolumeClaim"
)

// Volume is a Secret, ConfigMap or PersistentVolumeClaim of the pool's
// namespace mounted into the app container.
type Volume struct {
	Name      string
	MountPath string
	Kind      VolumeKind
	// Object is the Secret's, ConfigMap's or claim's name.
	Object string
	// Optional: the app starts without the Secret or ConfigMap.
	Optional bool
	ReadOnly bool
}

// ReservedMountPaths are the app container's paths the pod mounts itself:
// its writable /tmp, the API token's folder (under /var/run, which images
// often link to /run), and what the kubelet and the runtime mount. An app's
// volume may not be one of them, nor lie inside or above one.
var ReservedMountPaths = []string{
	"/tmp", "/dev", "/proc", "/sys", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf",
	"/var/run/secrets/kubernetes.io/serviceaccount", "/run/secrets/kubernetes.io/serviceaccount",
}

// AppProtocol is what the app speaks on its port.
type AppProtocol string

const (
	AppHTTP  AppProtocol = "HTTP"  // HTTP/1.1
	AppHTTP2 AppProtocol = "HTTP2" // HTTP/2 without TLS (h2c)
	AppGRPC  AppProtocol = "GRPC"  // gRPC over h2c, with the gRPC health service
)

// AppNginxCPUMilli is the CPU of the nginx beside a pool's app container.
func (p Pool) AppNginxCPUMilli() int64 { return max(50, p.CPUMilli/4) }

// WorkerCPUMilli is all the CPU one worker of the pool may use (its
// containers' limits): what the autoscaler counts a worker's cycles against.
func (p Pool) WorkerCPUMilli() int64 {
	if p.App != nil {
		return p.CPUMilli + p.AppNginxCPUMilli()
	}
	return p.CPUMilli
}

// HTTP2 reports whether the pool's workers take HTTP/2 from the frontend:
// their app speaks HTTP/2 or gRPC, which nginx passes on as HTTP/2.
func (p Pool) HTTP2() bool {
	return p.App != nil && (p.App.Protocol == AppHTTP2 || p.App.Protocol == AppGRPC)
}

// EnvVar is an environment variable: a Value, or a key of a Secret or a
// ConfigMap (From set).
type EnvVar struct {
	Name, Value string
	From        *KeyRef
}

// KeyRef is a key of a Secret (Secret true) or a ConfigMap in the pool's
// namespace.
type KeyRef struct {
	Secret    bool
	Name, Key string
	Optional  bool
}

// Rollout is how many workers an update may start above the pool's count
// and stop before their replacements are Ready (not both 0).
type Rollout struct{ MaxSurge, MaxUnavailable int32 }

// HealthCheck is the resolved worker health monitoring.
type HealthCheck struct {
	// Path, Interval, Timeout and FailureThreshold decide whether a worker
	// receives traffic.
	Path             string
	Interval         time.Duration
	Timeout          time.Duration
	FailureThreshold int32
	// Pinging: the kubelet restarts a worker that does not answer a ping
	// at Path within PingResponseTime; pings are PingInterval apart.
	Pinging          bool
	PingInterval     time.Duration
	PingResponseTime time.Duration
	// StartupTimeLimit: a worker must answer its first ping this soon after
	// it starts, or it is restarted.
	StartupTimeLimit time.Duration
	// ShutdownTimeLimit: a leaving worker drains (WorkerDrainPause) and
	// stops within this, or it is killed.
	ShutdownTimeLimit time.Duration
}

// WorkerDrainPause is how long a leaving pool worker's application keeps
// running after the worker is told to stop: nginx serves on for a shorter
// pause while the frontends forget the worker, then finishes the requests it
// sent the application. A shutdown time limit must exceed it.
const WorkerDrainPause = 10 * time.Second

// Cache is a resolved CachePolicy with the pools it fronts.
type Cache struct {
	Name      string
	Namespace string
	UID       string

	FrequentHitThreshold int32
	FrequentHitPeriod    time.Duration
	ObjectTTL            time.Duration
	MaxObjectSizeBytes   int64
	MemorySizeBytes      int64
	CacheQueryStrings    bool
	ClientCacheMode      string
	ClientMaxAge         time.Duration
	Replicas             int32
	CPUMilli             int64

	// Upstreams are the pools behind the cache tier, sorted by pool name.
	Upstreams []Upstream
	// AdminToken is the secret the tier's agents ask of the operator's
	// stats and purge requests; made once per tier and kept in its ConfigMap.
	AdminToken string

	Placement Placement

	Platform Platform
}

// Upstream is a pool behind a cache tier, reached at its Service address.
type Upstream struct {
	Pool    string
	Address string // IP address of the pool's Service
	Port    int32
}
