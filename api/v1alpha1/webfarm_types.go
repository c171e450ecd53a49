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

// UnavailableResponse is how the frontend answers for a pool that cannot serve
// (stopped by rapid-fail protection or the CPU monitor): the IIS metabase's
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
// +kubebuilder:validation:XValidation:rule="size(self.sites.map(s, s.hosts).flatten()) > 512 || size(self.sites.map(s, s.hosts).flatten()) == size(self.sites.map(s, s.hosts).flatten().distinct())",message="a host name may belong to only one site"
type WebFarmSpec struct {
	// Sites served by the farm. Each host name belongs to exactly one site.
	//
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=500
	Sites []Site `json:"sites"`

	// Frontend configures the Envoy deployment that receives the farm's traffic.
	//
	// +optional
	// +kubebuilder:default={}
	Frontend Frontend `json:"frontend,omitzero"`

	// SessionAffinity keeps a client on one worker of a pool.
	//
	// +optional
	// +kubebuilder:default={}
	SessionAffinity SessionAffinity `json:"sessionAffinity,omitzero"`

	// UnavailableResponse is how the frontend answers for a stopped pool: "L7"
	// answers HTTP 503, "L4" resets the connection (for layer 4 balancers in front).
	//
	// +optional
	// +kubebuilder:default=L7
	UnavailableResponse UnavailableResponse `json:"unavailableResponse,omitempty"`
}

// Site is a web site: the host names it answers to and its routes.
type Site struct {
	// Name identifies the site within the farm (a DNS label); it names the site's
	// virtual host and metrics.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Hosts are the host names (the Host header, without port) the site answers to.
	//
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Hosts []Hostname `json:"hosts"`

	// Routes send requests to application pools by the longest matching path
	// prefix; each path prefix appears once.
	//
	// +listType=map
	// +listMapKey=pathPrefix
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Routes []Route `json:"routes"`

	// MaxBandwidthBytesPerSecond limits the site's response bandwidth on each
	// frontend replica (IIS MaxBandwidth). Unset means unlimited.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1024
	MaxBandwidthBytesPerSecond *int64 `json:"maxBandwidthBytesPerSecond,omitempty"`
}

// Route maps a path prefix of a site to an application pool, optionally through
// a cache tier.
type Route struct {
	// PathPrefix matches the start of the request path ("/" matches everything).
	//
	// +optional
	// +kubebuilder:default="/"
	PathPrefix PathPrefix `json:"pathPrefix,omitempty"`

	// AppPool is the name of the AppPool in the farm's namespace that serves the route.
	AppPool ObjectName `json:"appPool"`

	// CachePolicy, when set, names a CachePolicy in the farm's namespace: the
	// route is served through that policy's cache tier.
	//
	// +optional
	CachePolicy ObjectName `json:"cachePolicy,omitempty"`
}

// Frontend configures the Envoy frontend.
type Frontend struct {
	// Replicas is the number of Envoy pods.
	//
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Replicas int32 `json:"replicas,omitempty"`

	// Service exposes the frontend.
	//
	// +optional
	// +kubebuilder:default={}
	Service FrontendService `json:"service,omitzero"`

	// ConnectionTimeout closes an idle client connection after this long
	// (IIS ConnectionTimeout, 120 s).
	//
	// +optional
	// +kubebuilder:default="120s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="connectionTimeout must be between 1s and 1h"
	ConnectionTimeout Duration `json:"connectionTimeout,omitempty"`

	// RequestTimeout bounds a whole request, queueing included; a request that
	// exceeds it is answered 504.
	//
	// +optional
	// +kubebuilder:default="120s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('1h'))",message="requestTimeout must be between 1s and 1h"
	RequestTimeout Duration `json:"requestTimeout,omitempty"`

	// KeepAlive keeps client connections open between requests (HTTP keep-alive).
	//
	// +optional
	// +kubebuilder:default=true
	KeepAlive *bool `json:"keepAlive,omitempty"`

	// Compression compresses text responses (gzip) for clients that accept it.
	//
	// +optional
	// +kubebuilder:default=false
	Compression *bool `json:"compression,omitempty"`

	// CPU is the CPU each Envoy replica requests and is limited to.
	//
	// +optional
	// +kubebuilder:default="500m"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('10m')) >= 0 && quantity(string(self)).compareTo(quantity('64')) <= 0)",message="frontend cpu must be between 10m and 64"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory is the memory each Envoy replica requests and is limited to.
	//
	// +optional
	// +kubebuilder:default="256Mi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('16Mi')) >= 0 && quantity(string(self)).compareTo(quantity('1Ti')) <= 0)",message="frontend memory must be between 16Mi and 1Ti"
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// FrontendService configures the Service in front of the Envoy pods.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.type != 'ClusterIP'",message="nodePort needs type NodePort or LoadBalancer"
type FrontendService struct {
	// Type is the Service type.
	//
	// +optional
	// +kubebuilder:default=ClusterIP
	Type ServiceType `json:"type,omitempty"`

	// Port is the Service's HTTP port.
	//
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// NodePort fixes the node port for type NodePort or LoadBalancer.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort *int32 `json:"nodePort,omitempty"`
}

// SessionAffinity keeps a client on one worker.
//
// +kubebuilder:validation:XValidation:rule="!has(self.cookie) || (has(self.type) && self.type == 'Cookie')",message="cookie settings need type Cookie"
type SessionAffinity struct {
	// Type: None spreads requests; ClientIP hashes the client address; ClassC
	// hashes the client's /24 network; Cookie sets a cookie that names the worker.
	//
	// +optional
	// +kubebuilder:default=None
	Type AffinityType `json:"type,omitempty"`

	// Cookie configures the affinity cookie for type Cookie.
	//
	// +optional
	Cookie *AffinityCookieSpec `json:"cookie,omitempty"`
}

// AffinityCookieSpec names the affinity cookie and its lifetime.
type AffinityCookieSpec struct {
	// Name of the cookie: letters, digits, '.', '_' or '-'.
	//
	// +optional
	// +kubebuilder:default=WEBFARM_AFFINITY
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+$`
	Name string `json:"name,omitempty"`

	// TTL is the cookie's lifetime; "0s" makes it a session cookie that ends when
	// the browser closes.
	//
	// +optional
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) <= duration('8760h'))",message="cookie ttl must be at most 8760h (one year)"
	TTL Duration `json:"ttl,omitempty"`
}

// WebFarmStatus is the observed state of a web farm.
type WebFarmStatus struct {
	// ObservedGeneration is the generation the status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the frontend and every routed pool serve), Degraded and Paused.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// HostCount is the number of host names the farm answers to.
	//
	// +optional
	HostCount int32 `json:"hostCount,omitempty"`

	// PoolCount is the number of distinct application pools the routes name.
	//
	// +optional
	PoolCount int32 `json:"poolCount,omitempty"`

	// FrontendReplicas is "ready/desired" for the Envoy pods.
	//
	// +optional
	FrontendReplicas string `json:"frontendReplicas,omitempty"`

	// Address is the in-cluster URL of the frontend Service.
	//
	// +optional
	Address string `json:"address,omitempty"`
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
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="a WebFarm name may be at most 50 characters (its children add a suffix)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a WebFarm name must be a DNS label (lowercase letters, digits and dashes, no dots): its Service is named after it"
type WebFarm struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec WebFarmSpec `json:"spec"`

	// Status is the observed state, written by the operator.
	//
	// +optional
	Status WebFarmStatus `json:"status,omitempty"`
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
