package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Hostname is a DNS name a site answers to: lowercase RFC 1123 labels separated
// by dots ("www.example.com"), or a wildcard whose first label is "*"
// ("*.example.com" matches any one or more labels in front of example.com).
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`
type Hostname string

// PathPrefix is the start of a request path: "/" or segments of letters, digits
// and "-._~" separated by single slashes, without "." or ".." segments, at most
// 256 characters. Requests match by whole segments: "/shop" matches "/shop" and
// "/shop/cart", not "/shopping".
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:Pattern=`^/(([A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.[A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.\.[A-Za-z0-9._~-]+)(/([A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.[A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.\.[A-Za-z0-9._~-]+))*/?)?$`
type PathPrefix string

// AffinityType chooses how the frontend keeps a client on one worker.
//
// +kubebuilder:validation:Enum=None;ClientIP;ClassC;Cookie
type AffinityType string

const (
	// AffinityNone spreads requests across workers.
	AffinityNone AffinityType = "None"
	// AffinityClientIP sends every request from one source address to one worker.
	AffinityClientIP AffinityType = "ClientIP"
	// AffinityClassC sends every request from one /24 network to one worker, for
	// clients behind a pool of proxies (Network Load Balancing's "Class C" affinity).
	AffinityClassC AffinityType = "ClassC"
	// AffinityCookie pins a client to a worker with a cookie the frontend sets.
	AffinityCookie AffinityType = "Cookie"
)

// UnavailableResponse is how the frontend refuses a request for a pool that
// cannot take it (stopped, without a ready worker, its queue full, an
// on-demand start that timed out): the IIS metabase's
// LoadBalancerCapabilities.
//
// +kubebuilder:validation:Enum=L7;L4
type UnavailableResponse string

const (
	// UnavailableL7 answers HTTP 503 (LoadBalancerCapabilities = 2, the IIS default).
	UnavailableL7 UnavailableResponse = "L7"
	// UnavailableL4 resets the connection, for layer 3/4 load balancers in front
	// (LoadBalancerCapabilities = 1).
	UnavailableL4 UnavailableResponse = "L4"
)

// ServiceType is the Kubernetes Service type of the frontend.
//
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ServiceType string

// WebFarmSpec is the desired state of a web farm: its sites and how the Envoy
// frontend routes them to application pools.
//
// A host name may belong to only one site. The API server checks this for farms
// of up to 512 host names (the check's cost grows with the square of the count
// and the API server bounds it); the operator checks every farm and reports a
// conflict in the Ready condition (reason InvalidSpec) without changing the
// farm's data plane.
//
// +kubebuilder:validation:XValidation:rule="!has(self.frontend.tls) || (has(self.sites) && self.sites.exists(s, has(s.tls)))",message="frontend.tls needs a site with tls"
// +kubebuilder:validation:XValidation:rule="!has(self.frontend.tls) || !has(self.frontend.tls.defaultSite) || has(self.sites) && self.sites.exists(s, s.name == self.frontend.tls.defaultSite && has(s.tls))",message="frontend.tls.defaultSite must name a site with tls"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionAffinity.cookie) || !has(self.sessionAffinity.cookie.sameSite) || self.sessionAffinity.cookie.sameSite != 'None' || !has(self.sites) || self.sites.all(s, has(s.tls) && (!has(s.tls.plainHTTP) || s.tls.plainHTTP == 'Redirect'))",message="sameSite None needs every site to have tls with plainHTTP Redirect (browsers take it only on a Secure cookie)"
// +kubebuilder:validation:XValidation:rule="!has(self.sites) || size(self.sites.map(s, s.hosts).flatten()) > 512 || size(self.sites.map(s, s.hosts).flatten()) == size(self.sites.map(s, s.hosts).flatten().distinct())",message="a host name may belong to only one site"
type WebFarmSpec struct {
	// sites served by the farm. Each host name belongs to exactly one site.
	// A farm that serves a Gateway (Gateway API) may have none: the routes
	// attached to its Gateway are then its only sites.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=500
	Sites []Site `json:"sites,omitempty"`

	// frontend configures the Envoy deployment that receives the farm's traffic.
	//
	// +optional
	// +default={}
	Frontend Frontend `json:"frontend,omitzero"`

	// sessionAffinity keeps a client on one worker of a pool.
	//
	// +optional
	// +default={}
	SessionAffinity SessionAffinity `json:"sessionAffinity,omitzero"`

	// unavailableResponse is how the frontend refuses a request for a pool
	// that cannot take it (stopped, idle without on-demand start, without a
	// ready worker, its queue full, or an on-demand start that timed out):
	// "L7" answers HTTP 503, "L4" cuts the connection (for layer 4 balancers
	// in front).
	//
	// +optional
	// +default="L7"
	UnavailableResponse UnavailableResponse `json:"unavailableResponse,omitempty"`
}

// Site is a web site: the host names it answers to and its routes.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxConnections) || (has(self.tls) && self.tls.plainHTTP != 'Serve')",message="maxConnections counts a site's HTTPS connections: it needs tls, with plainHTTP Redirect (a plain HTTP connection is shared by every site until a request names its host)"
type Site struct {
	// name identifies the site within the farm (a DNS label); it names the site's
	// virtual host and metrics.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// hosts are the host names (the Host header, without port) the site answers to.
	//
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Hosts []Hostname `json:"hosts,omitempty"`

	// routes send requests to application pools by the longest matching path
	// prefix; each path prefix appears once.
	//
	// +required
	// +listType=map
	// +listMapKey=pathPrefix
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Routes []Route `json:"routes,omitempty"`

	// maxBandwidthBytesPerSecond limits the site's response bandwidth on each
	// frontend replica (IIS MaxBandwidth), in whole KiB/s (rounded down): each
	// replica paces the site's responses together, apart from other sites.
	// Unset means unlimited.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1024
	MaxBandwidthBytesPerSecond int64 `json:"maxBandwidthBytesPerSecond,omitempty"`

	// maxConnections bounds the site's open HTTPS connections on each
	// frontend replica (IIS MaxConnections): a connection past it is closed
	// before its TLS handshake, so one site's flood of connections cannot
	// take the others'. Unset means unbounded. It needs tls with plainHTTP
	// Redirect: plain HTTP connections belong to no site until their first
	// request.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	MaxConnections int32 `json:"maxConnections,omitempty"`

	// tls serves the site over HTTPS with the certificate of a Secret; unset,
	// the site is plain HTTP only.
	//
	// +optional
	TLS SiteTLS `json:"tls,omitzero"`
}

// SecretName is the name of a Secret in the same namespace (a DNS subdomain).
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type SecretName string

// PlainHTTP is what a site with HTTPS does with plain HTTP requests.
//
// +kubebuilder:validation:Enum=Redirect;Serve
type PlainHTTP string

const (
	// PlainHTTPRedirect answers plain HTTP with a permanent redirect (301) to
	// the same host and path over HTTPS.
	PlainHTTPRedirect PlainHTTP = "Redirect"
	// PlainHTTPServe serves the site over plain HTTP as well as HTTPS.
	PlainHTTPServe PlainHTTP = "Serve"
)

// SiteTLS is a site's HTTPS.
type SiteTLS struct {
	// secretName names a Secret of type kubernetes.io/tls (keys tls.crt and
	// tls.key, as cert-manager writes it) in the farm's namespace. The
	// frontend pods mount it and pick up a renewed certificate without a
	// restart. A missing or malformed certificate fails only this site's
	// HTTPS and shows in the farm's CertificatesReady condition.
	//
	// +required
	SecretName SecretName `json:"secretName,omitempty"`

	// plainHTTP is what plain HTTP requests for the site get: "Redirect"
	// answers 301 to the same URL over HTTPS, "Serve" serves them too.
	//
	// +optional
	// +default="Redirect"
	PlainHTTP PlainHTTP `json:"plainHTTP,omitempty"`

	// hsts adds a Strict-Transport-Security header to the site's HTTPS
	// responses, which tells browsers to use only HTTPS for the site; unset,
	// none is sent.
	//
	// +optional
	HSTS HSTS `json:"hsts,omitzero"`
}

// HSTS is a Strict-Transport-Security header (RFC 6797).
type HSTS struct {
	// maxAgeSeconds is how long browsers remember to use only HTTPS
	// (max-age), at most two years.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=63072000
	MaxAgeSeconds int32 `json:"maxAgeSeconds,omitempty"`

	// includeSubDomains extends the rule to every subdomain of the host.
	//
	// +optional
	// +default=false
	IncludeSubDomains *bool `json:"includeSubDomains,omitempty"`
}

// Route maps a path prefix of a site to an application pool, optionally through
// a cache tier.
type Route struct {
	// pathPrefix matches the start of the request path ("/" matches everything).
	//
	// +optional
	// +default="/"
	PathPrefix PathPrefix `json:"pathPrefix,omitempty"`

	// appPool is the name of the AppPool in the farm's namespace that serves the route.
	//
	// +required
	AppPool ObjectName `json:"appPool,omitempty"`

	// cachePolicy names a CachePolicy in the farm's namespace whose cache tier
	// serves the route; unset, the route goes to the pool directly.
	//
	// +optional
	CachePolicy ObjectName `json:"cachePolicy,omitempty"`

	// content serves the route from a directory of the pool's content, with
	// default documents and error pages of its own (an IIS site's physical
	// path, default documents and custom errors). Many sites thus share one
	// pool's workers, each with its own files; adding, changing or removing
	// a site changes only the frontend's routes, never the pool's workers.
	// Unset, the route serves the pool's content root with the pool's
	// default documents.
	//
	// +optional
	Content RouteContent `json:"content,omitzero"`
}

// RouteContent is what a route serves of its pool's static content.
//
// +kubebuilder:validation:MinProperties=1
type RouteContent struct {
	// directory of the pool's content that the route serves as its root
	// ("sites/shop": /logo.svg is sites/shop/logo.svg). Unset: the content's
	// root.
	//
	// +optional
	Directory ContentDirectory `json:"directory,omitempty"`

	// defaultDocuments are the files a folder's URL serves, the first that
	// exists, at most 8. Unset: the pool's (content.defaultDocuments).
	//
	// +optional
	DefaultDocuments DefaultDocuments `json:"defaultDocuments,omitempty"`

	// errorPages answer errors of the pool's workers with files of the
	// route's directory (IIS custom errors), one per status code. They
	// replace the workers' own answers (a missing file, a folder without a
	// default document, a method a file does not take, an app that cannot
	// be reached or timed out), not the answers of a pool's app.
	//
	// +optional
	// +listType=map
	// +listMapKey=statusCode
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	ErrorPages []ErrorPage `json:"errorPages,omitempty"`
}

// ErrorPage answers one status code with a file.
type ErrorPage struct {
	// statusCode is the error answered: 403, 404, 405, 500, 502, 503 or 504.
	//
	// +required
	// +kubebuilder:validation:Minimum=403
	// +kubebuilder:validation:Maximum=504
	// +kubebuilder:validation:Enum=403;404;405;500;502;503;504
	StatusCode int32 `json:"statusCode,omitempty"`

	// path of the page within the route's directory ("/errors/404.html");
	// it is sent with the error's status code. A missing page leaves the
	// worker's own answer.
	//
	// +required
	Path ContentPath `json:"path,omitempty"`
}

// Frontend configures the Envoy frontend.
type Frontend struct {
	// replicas is the number of Envoy pods; with autoscaling, the number
	// they start at (within its bounds) until the first measurement.
	//
	// +optional
	// +default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Replicas int32 `json:"replicas,omitempty"`

	// autoscaling sizes the frontends from their measured cycles per request
	// (status.frontendCapacity), by a pool's rules: out at once when the load
	// needs more cycles than they offer at the target utilisation, in only
	// after the need has stayed lower for the stabilisation window, never on
	// incomplete figures. A frontend that leaves drains its open connections
	// first.
	//
	// +optional
	Autoscaling *FrontendAutoscaling `json:"autoscaling,omitempty"`

	// service exposes the frontend.
	//
	// +optional
	// +default={}
	Service FrontendService `json:"service,omitzero"`

	// connectionTimeout closes an idle client connection after this long
	// (IIS ConnectionTimeout, 120 s).
	//
	// +optional
	// +default="120s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="connectionTimeout must be between 1s and 1h"
	ConnectionTimeout Duration `json:"connectionTimeout,omitempty"`

	// requestTimeout bounds a whole request, queueing included; a request that
	// exceeds it is answered 504.
	//
	// +optional
	// +default="120s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="requestTimeout must be between 1s and 1h"
	RequestTimeout Duration `json:"requestTimeout,omitempty"`

	// webSocketIdleTimeout closes a WebSocket that carried no message either
	// way for this long. An open WebSocket is not bounded by requestTimeout:
	// it lives as long as it is in use.
	//
	// +optional
	// +default="300s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="webSocketIdleTimeout must be between 1s and 1h"
	WebSocketIdleTimeout Duration `json:"webSocketIdleTimeout,omitempty"`

	// keepAlive keeps client connections open between requests (HTTP
	// keep-alive); false answers each request with "Connection: close" and
	// closes the connection.
	//
	// +optional
	// +default=true
	KeepAlive *bool `json:"keepAlive,omitempty"`

	// compression compresses responses of text types (HTML, CSS, JavaScript,
	// JSON, XML, SVG, plain text) of at least 256 bytes with brotli or gzip,
	// as the client's Accept-Encoding prefers, with "Vary: Accept-Encoding".
	// Responses already encoded are left alone.
	//
	// +optional
	// +default=false
	Compression *bool `json:"compression,omitempty"`

	// debugHeaders tells clients what served them, for debugging: each
	// response from a pool carries X-Webfarm-Worker with the name of the
	// worker pod that made it, and a Server header names Envoy. Off, clients
	// get neither, nor the pools' Server header; the access log names the
	// worker either way.
	//
	// +optional
	// +default=false
	DebugHeaders *bool `json:"debugHeaders,omitempty"`

	// clientAddress says which address is the client's when load balancers
	// or proxies stand in front of the frontend. Unset, it is the address
	// that connects to the frontend, and X-Forwarded-For from clients is not
	// believed.
	//
	// +optional
	ClientAddress ClientAddress `json:"clientAddress,omitzero"`

	// accessLog writes a JSON line per request (site, pool, worker, status,
	// timings, what the pool's queue did) to each frontend replica's
	// standard output, where "kubectl logs" reads it. Unset, every request
	// is logged.
	//
	// +optional
	AccessLog AccessLog `json:"accessLog,omitzero"`

	// tls configures the HTTPS listener that serves the sites with a tls
	// section.
	//
	// +optional
	TLS FrontendTLS `json:"tls,omitzero"`

	// cpu is the CPU each Envoy replica requests and is limited to.
	//
	// +optional
	// +default="500m"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('10m')) >= 0 && quantity(string(self)).compareTo(quantity('64')) <= 0)",message="frontend cpu must be between 10m and 64"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// memory is the memory each Envoy replica requests and is limited to.
	//
	// +optional
	// +default="256Mi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('16Mi')) >= 0 && quantity(string(self)).compareTo(quantity('1Ti')) <= 0)",message="frontend memory must be between 16Mi and 1Ti"
	Memory *resource.Quantity `json:"memory,omitempty"`

	// placement says where the Envoy pods run (dedicated edge nodes, for
	// example). Unset, they spread over nodes and zones.
	//
	// +optional
	Placement Placement `json:"placement,omitzero"`

	// clientLimits bound what one client can take of the frontend: the time
	// and size of its request headers, the time of its request body and,
	// when set, the requests per second of one address or one /24 network.
	// Unset, the bounds' defaults apply and no client's rate is limited.
	//
	// +optional
	// +default={}
	ClientLimits ClientLimits `json:"clientLimits,omitzero"`
}

// ClientLimits contain greedy and slow clients: a client that sends its
// headers or body slowly holds a connection no longer than the timeouts,
// and one that floods gets 429 while others are served. Each Envoy replica
// counts on its own: a farm of N frontend replicas admits up to N times a
// rate.
type ClientLimits struct {
	// requestHeadersTimeout is how long a client has from a request's first
	// byte to send all its headers; or gets 408 and its connection is
	// closed (IIS: http.sys HeaderWaitTimeout). Short, so that slow-header
	// clients cannot hold many connections.
	//
	// +optional
	// +default="10s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('5m'))",message="requestHeadersTimeout must be between 1s and 5m"
	RequestHeadersTimeout Duration `json:"requestHeadersTimeout,omitempty"`

	// requestBodyTimeout is how long a client has from a request's start
	// to send all of it, body included, unless the answer has begun; else
	// it gets 408 (IIS: http.sys EntityBody timeout, 120 s). A WebSocket is
	// not bounded by it once upgraded.
	//
	// +optional
	// +default="120s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="requestBodyTimeout must be between 1s and 1h"
	RequestBodyTimeout Duration `json:"requestBodyTimeout,omitempty"`

	// maxRequestHeadersKiB bounds a request's headers, request line
	// included; a larger request gets 431 (IIS: http.sys MaxRequestBytes,
	// 16 KiB).
	//
	// +optional
	// +default=16
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=96
	MaxRequestHeadersKiB int32 `json:"maxRequestHeadersKiB,omitempty"`

	// perAddress limits the requests of each client address (as
	// clientAddress finds it behind proxies) to each frontend replica
	// (IIS: Dynamic IP Restrictions, deny by request rate). Over the limit
	// a request gets 429 with Retry-After (a connection reset when
	// unavailableResponse is L4). Unset: no limit.
	//
	// +optional
	PerAddress RequestRate `json:"perAddress,omitzero"`

	// perClassC limits the requests of each /24 network of clients (/56
	// for IPv6), as sessionAffinity ClassC groups them, to each frontend
	// replica: one network's flood from many addresses gets 429. Unset: no
	// limit.
	//
	// +optional
	PerClassC RequestRate `json:"perClassC,omitzero"`
}

// RequestRate is a token bucket: requestsPerSecond on average, burst at
// once.
//
// +kubebuilder:validation:XValidation:rule="!has(self.burst) || self.burst >= self.requestsPerSecond",message="burst must be at least requestsPerSecond"
type RequestRate struct {
	// requestsPerSecond a client may send on average.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	RequestsPerSecond int32 `json:"requestsPerSecond,omitempty"`

	// burst is how many requests a client may send at once after a quiet
	// spell. Unset: requestsPerSecond.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000000
	Burst int32 `json:"burst,omitempty"`
}

// ClientAddress says how the frontend learns the client's address behind
// proxies: by the PROXY protocol, or from X-Forwarded-For entries that
// trusted proxies appended. ClientIP and ClassC affinity, the X-Real-IP header
// the pools get and the access log use the address found.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.trustedHops) && has(self.trustedNetworks))",message="set trustedHops or trustedNetworks, not both"
type ClientAddress struct {
	// trustedHops is how many proxies in front of the frontend append to
	// X-Forwarded-For (a cloud load balancer is 1): the client is the entry
	// that many places from the right, so entries a client wrote itself are
	// never taken for its address.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	TrustedHops int32 `json:"trustedHops,omitempty"`

	// trustedNetworks are the networks of the proxies in front of the
	// frontend, as CIDRs ("10.0.0.0/8"): when a request comes from one of
	// them, X-Forwarded-For is read from the right past the entries within
	// them, and the first address outside is the client. Requests from
	// elsewhere keep their connecting address.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	TrustedNetworks []CIDR `json:"trustedNetworks,omitempty"`

	// proxyProtocol makes the frontend expect the PROXY protocol (version 1
	// or 2) at the start of every connection, as load balancers send it when
	// told to; the address it carries is the client's. Connections without it
	// are closed.
	//
	// +optional
	// +default=false
	ProxyProtocol *bool `json:"proxyProtocol,omitempty"`
}

// CIDR is an IPv4 or IPv6 network in CIDR notation ("192.0.2.0/24").
//
// +kubebuilder:validation:MinLength=4
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a CIDR such as 10.0.0.0/8"
type CIDR string

// AccessLog configures the frontend's access log.
type AccessLog struct {
	// enabled writes the access log; false writes none.
	//
	// +optional
	// +default=true
	Enabled *bool `json:"enabled,omitempty"`

	// samplePercent is the percentage of requests logged, each request drawn
	// at random on its own (a busy farm's log at a fraction of the volume).
	//
	// +optional
	// +default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SamplePercent int32 `json:"samplePercent,omitempty"`
}

// TLSVersion is a TLS protocol version.
//
// +kubebuilder:validation:Enum="1.2";"1.3"
type TLSVersion string

// FrontendAutoscaling sizes a farm's Envoy frontends from their measured
// cycles per request, as Autoscaling sizes a pool.
//
// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="minReplicas must be less than or equal to maxReplicas"
type FrontendAutoscaling struct {
	// minReplicas is the fewest frontends the farm keeps.
	//
	// +optional
	// +default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most frontends the farm starts.
	//
	// +optional
	// +default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxReplicas int32 `json:"maxReplicas,omitempty"`

	// targetCPUUtilizationPercent is the share of the frontends' cycles the
	// load may use (the capacity-planning policy of 30 %).
	//
	// +optional
	// +default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercent int32 `json:"targetCPUUtilizationPercent,omitempty"`

	// stabilizationWindow is how long the recommendation must stay lower
	// before the farm removes a frontend.
	//
	// +optional
	// +default="300s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) <= duration('24h'))",message="stabilizationWindow must be at most 24h"
	StabilizationWindow Duration `json:"stabilizationWindow,omitempty"`
}

// FrontendTLS configures the frontend's HTTPS listener.
type FrontendTLS struct {
	// minVersion is the oldest TLS version the frontend accepts.
	//
	// +optional
	// +default="1.2"
	MinVersion TLSVersion `json:"minVersion,omitempty"`

	// defaultSite names the site (with tls) whose certificate a client that
	// sends no server name (SNI) gets; unset, the first such site by name.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	DefaultSite string `json:"defaultSite,omitempty"`
}

// FrontendService configures the Service in front of the Envoy pods.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.type != 'ClusterIP'",message="nodePort needs type NodePort or LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.externalTrafficPolicy) || self.type != 'ClusterIP'",message="externalTrafficPolicy needs type NodePort or LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerClass) || self.type == 'LoadBalancer'",message="loadBalancerClass needs type LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || self.type == 'LoadBalancer'",message="loadBalancerSourceRanges needs type LoadBalancer"
// +kubebuilder:validation:XValidation:rule="self.type != 'LoadBalancer' || oldSelf.type != 'LoadBalancer' || (has(self.loadBalancerClass) == has(oldSelf.loadBalancerClass) && (!has(self.loadBalancerClass) || self.loadBalancerClass == oldSelf.loadBalancerClass))",message="loadBalancerClass cannot change while the type stays LoadBalancer: Kubernetes fixes a Service's load balancer class once it has one"
type FrontendService struct {
	// type is the Service type.
	//
	// +optional
	// +default="ClusterIP"
	Type ServiceType `json:"type,omitempty"`

	// port is the Service's HTTP port.
	//
	// +optional
	// +default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// nodePort fixes the node port for type NodePort or LoadBalancer.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort int32 `json:"nodePort,omitempty"`

	// httpsPort is the Service's HTTPS port, open when a site has tls.
	//
	// +optional
	// +default=443
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	HTTPSPort int32 `json:"httpsPort,omitempty"`

	// externalTrafficPolicy is how a NodePort or LoadBalancer Service
	// routes traffic that reaches a node. Unset, it is Local: a node passes
	// traffic only to frontends on itself, so the frontend sees the client's
	// address (ClientIP and ClassC affinity hash on it, and the access log
	// and the pools' X-Real-IP carry it); nodes without a frontend fail the
	// load balancer's health check and get no traffic. Cluster lets every
	// node pass traffic to any frontend, one more hop that hides the
	// client's address behind the node's, unless the load balancer passes
	// it on (see clientAddress).
	//
	// +optional
	ExternalTrafficPolicy ExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`

	// loadBalancerClass names the load balancer implementation of a
	// LoadBalancer Service ("service.k8s.aws/nlb"); unset, the cluster's
	// default. Kubernetes fixes it once the Service has one: changing it
	// needs another type first, or a new farm.
	//
	// +optional
	LoadBalancerClass LabelKey `json:"loadBalancerClass,omitempty"`

	// annotations are put on the Service, where load balancer controllers
	// read their settings (the kind of load balancer, its scheme, health
	// checks, PROXY protocol). Keys are qualified names
	// ("service.beta.kubernetes.io/aws-load-balancer-scheme"), values at
	// most 4096 characters.
	//
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (k.indexOf('/') < 0 || k.indexOf('/') <= 253))",message="annotation keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 4096)",message="annotation values may be at most 4096 characters"
	Annotations map[string]string `json:"annotations,omitempty"`

	// loadBalancerSourceRanges are the client networks (CIDRs) a
	// LoadBalancer Service admits, where the cloud supports it; unset,
	// every client.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	LoadBalancerSourceRanges []CIDR `json:"loadBalancerSourceRanges,omitempty"`
}

// SessionAffinity keeps a client on one worker.
//
// +kubebuilder:validation:XValidation:rule="!has(self.cookie) || (has(self.type) && self.type == 'Cookie')",message="cookie settings need type Cookie"
type SessionAffinity struct {
	// type chooses how: None spreads requests; ClientIP hashes the client address; ClassC
	// hashes the client's /24 network; Cookie sets a cookie that names the worker.
	//
	// +optional
	// +default="None"
	Type AffinityType `json:"type,omitempty"`

	// cookie configures the affinity cookie for type Cookie.
	//
	// +optional
	Cookie *AffinityCookieSpec `json:"cookie,omitempty"`
}

// AffinityCookieSpec names the affinity cookie and its lifetime.
type AffinityCookieSpec struct {
	// name of the cookie: letters, digits, '.', '_' or '-'. Each pool has a
	// cookie of its own, named this, a dot and the pool's name (a route
	// through a cache tier: this, ".cache." and the policy's name).
	//
	// +optional
	// +default="WEBFARM_AFFINITY"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+$`
	Name string `json:"name,omitempty"`

	// ttl is the cookie's lifetime; "0s" makes it a session cookie that ends when
	// the browser closes.
	//
	// +optional
	// +default="0s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) <= duration('8760h'))",message="cookie ttl must be at most 8760h (one year)"
	TTL Duration `json:"ttl,omitempty"`

	// sameSite is the cookie's SameSite attribute. "None" lets the cookie
	// go with requests from other sites; browsers accept it only on a Secure
	// cookie, so it needs every site to have tls with plainHTTP Redirect.
	// Over HTTPS the cookie is always Secure.
	//
	// +optional
	// +default="Lax"
	SameSite SameSite `json:"sameSite,omitempty"`
}

// SameSite is a cookie's SameSite attribute.
//
// +kubebuilder:validation:Enum=Lax;Strict;None
type SameSite string

// CachedPool is a pool a farm's route reaches through a cache tier.
type CachedPool struct {
	// cachePolicy names the cache tier's CachePolicy.
	//
	// +required
	// +kubebuilder:validation:MaxLength=253
	CachePolicy string `json:"cachePolicy"`
	// appPool names the AppPool behind it.
	//
	// +required
	// +kubebuilder:validation:MaxLength=253
	AppPool string `json:"appPool"`
}

// WebFarmStatus is the observed state of a web farm.
type WebFarmStatus struct {
	// conditions are Ready (the frontend and every routed pool serve), Degraded,
	// Paused, ConfigAccepted (every frontend runs the routing configuration
	// served; False with reason Rejected and Envoy's message when a frontend
	// refused it) and, with HTTPS sites, CertificatesReady (every frontend
	// serves every site's certificate).
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

	// hostCount is the number of host names the farm answers to: its sites'
	// and those of the routes attached to its Gateways.
	//
	// +optional
	HostCount int32 `json:"hostCount"`

	// gatewayAppPools are the AppPools the routes attached to the farm's
	// Gateways (Gateway API) send to, beside its sites' pools: the farm
	// routes them, so their autoscaling counts its frontends' requests.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	GatewayAppPools []string `json:"gatewayAppPools,omitempty"`

	// gatewayCachedPools are the cache tiers the routes attached to the
	// farm's Gateways go through (an ExtensionRef filter naming a
	// CachePolicy), each with the pool behind it: the tier serves them.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	GatewayCachedPools []CachedPool `json:"gatewayCachedPools,omitempty"`

	// poolCount is the number of distinct application pools the routes name.
	//
	// +optional
	PoolCount int32 `json:"poolCount"`

	// frontendReplicas is "ready/desired" for the Envoy pods.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	FrontendReplicas string `json:"frontendReplicas,omitempty"`

	// address is the in-cluster URL of the frontend Service.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Address string `json:"address,omitempty"`

	// frontendConfig is the version of the routing configuration the
	// operator serves the farm's frontends, and the version each ready
	// frontend runs; the ConfigAccepted condition sums it up.
	//
	// +optional
	FrontendConfig FrontendConfigStatus `json:"frontendConfig,omitzero"`

	// frontendCapacity is what the autoscaler measured of the farm's
	// frontends and what their load needs: with frontend.autoscaling the
	// frontends follow it, without it is a report.
	//
	// +optional
	FrontendCapacity FrontendCapacity `json:"frontendCapacity,omitzero"`
}

// FrontendCapacity is the capacity of a farm's Envoy frontends, measured as
// a pool's is (AppPool status.capacity): the figures mean the same.
type FrontendCapacity struct {
	// requestsPerSecond served by the frontends, clear text and HTTPS.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	RequestsPerSecond string `json:"requestsPerSecond,omitempty"`
	// httpsRequestsPerSecond is the part of requestsPerSecond the frontends
	// served over TLS.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	HTTPSRequestsPerSecond string `json:"httpsRequestsPerSecond,omitempty"`
	// cpuCores used by the frontends (core-seconds per second).
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	CPUCores string `json:"cpuCores,omitempty"`
	// megacyclesPerRequest is the frontends' CPU cycles per request, in
	// millions.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	MegacyclesPerRequest string `json:"megacyclesPerRequest,omitempty"`
	// requiredMegahertz is the cycles per second the load needs at the
	// target utilisation (frontend.autoscaling.targetCPUUtilizationPercent,
	// or 30 %, a pool's default target).
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	RequiredMegahertz string `json:"requiredMegahertz,omitempty"`
	// recommendedReplicas is how many frontends of frontend.cpu give the
	// required cycles; with frontend.autoscaling the frontends follow it,
	// without it is a report: frontend.replicas sets them.
	//
	// +optional
	RecommendedReplicas *int32 `json:"recommendedReplicas,omitempty"`
	// lastScaleTime is when frontend.autoscaling last changed the
	// frontends' replicas.
	//
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// lastScaleReason says why.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	LastScaleReason string `json:"lastScaleReason,omitempty"`
}

// FrontendConfigStatus is which routing configuration a farm's frontends
// are served and run.
type FrontendConfigStatus struct {
	// version is the configuration's version the operator serves (a digest
	// of the farm's listeners, clusters, routes and endpoints).
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`

	// frontends are the ready frontends, each with the version it runs, by
	// pod name (the first 100).
	//
	// +optional
	// +listType=map
	// +listMapKey=pod
	// +kubebuilder:validation:MaxItems=100
	Frontends []FrontendVersion `json:"frontends,omitempty"`
}

// FrontendVersion is the routing configuration one frontend runs.
type FrontendVersion struct {
	// pod names the frontend's pod.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`

	// version is the configuration's version the frontend runs: that of its
	// latest accepted update.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`
}

// WebFarm is a set of web sites served by an Envoy frontend that routes each
// site's paths to application pools.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wf;farm,categories=web
// +kubebuilder:printcolumn:name="Hosts",type=integer,JSONPath=`.status.hostCount`
// +kubebuilder:printcolumn:name="Pools",type=integer,JSONPath=`.status.poolCount`
// +kubebuilder:printcolumn:name="Frontend",type=string,JSONPath=`.status.frontendReplicas`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Req/s",type=string,JSONPath=`.status.frontendCapacity.requestsPerSecond`
// +kubebuilder:printcolumn:name="Mcycles/Req",type=string,JSONPath=`.status.frontendCapacity.megacyclesPerRequest`
// +kubebuilder:printcolumn:name="Recommended",type=integer,JSONPath=`.status.frontendCapacity.recommendedReplicas`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="a WebFarm name may be at most 50 characters (its children add a suffix)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a WebFarm name must be a DNS label (lowercase letters, digits and dashes, no dots): its Service is named after it"
type WebFarm struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's name, namespace, labels and annotations.
	//
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	//
	// +required
	Spec WebFarmSpec `json:"spec,omitzero"`

	// status is the observed state, written by the operator.
	//
	// +optional
	Status WebFarmStatus `json:"status,omitzero"`
}

// WebFarmList is a list of WebFarms.
//
// +kubebuilder:object:root=true
type WebFarmList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebFarm `json:"items"`
}

func init() { SchemeBuilder.Register(&WebFarm{}, &WebFarmList{}) }
