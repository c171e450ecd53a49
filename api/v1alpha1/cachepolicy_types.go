package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PurgeAnnotation purges a cache tier: set it to a new value (a time, a
// commit, any token) and the operator removes every entry from every cache
// pod once, then reports the token in status.lastPurge.
const PurgeAnnotation = "webfarm.dev/purge"

// ClientCacheMode is the expiry header the cache tier puts on responses
// (IIS clientCache cacheControlMode).
//
// +kubebuilder:validation:Enum=NoControl;DisableCache;UseMaxAge;UseExpires
type ClientCacheMode string

const (
	// ClientCacheNoControl leaves the pool's headers as they are.
	ClientCacheNoControl ClientCacheMode = "NoControl"
	// ClientCacheDisable sends "Cache-Control: no-cache".
	ClientCacheDisable ClientCacheMode = "DisableCache"
	// ClientCacheMaxAge sends "Cache-Control: max-age=<maxAge>".
	ClientCacheMaxAge ClientCacheMode = "UseMaxAge"
	// ClientCacheExpires sends "Expires: <now + maxAge>".
	ClientCacheExpires ClientCacheMode = "UseExpires"
)

// CachePolicySpec is the desired state of a cache tier: IIS output and kernel
// cache semantics on an nginx cache in front of the pools of the routes that
// name this policy.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxObjectSize) || !has(self.memorySize) || !isQuantity(string(self.maxObjectSize)) || !isQuantity(string(self.memorySize)) || quantity(string(self.maxObjectSize)).compareTo(quantity(string(self.memorySize))) <= 0",message="maxObjectSize must not exceed memorySize"
type CachePolicySpec struct {
	// frequentHitThreshold is how many times a response must be requested within
	// frequentHitPeriod before it is cached (IIS frequentHitThreshold, 2); 1
	// caches on the first request.
	//
	// +optional
	// +default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	FrequentHitThreshold int32 `json:"frequentHitThreshold,omitempty"`

	// frequentHitPeriod is the window in which frequentHitThreshold requests must
	// arrive (IIS frequentHitTimePeriod, 10 s).
	//
	// +optional
	// +default="10s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('24h'))",message="frequentHitPeriod must be between 1s and 24h"
	FrequentHitPeriod Duration `json:"frequentHitPeriod,omitempty"`

	// objectTTL evicts an entry that has not been requested for this long
	// (IIS ObjectCacheTTL, 30 s).
	//
	// +optional
	// +default="30s"
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('720h'))",message="objectTTL must be between 1s and 720h"
	ObjectTTL Duration `json:"objectTTL,omitempty"`

	// maxObjectSize is the largest response that is cached (IIS MaxCachedFileSize, 256 KiB).
	//
	// +optional
	// +default="256Ki"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Ki')) >= 0)",message="maxObjectSize must be at least 1Ki"
	MaxObjectSize *resource.Quantity `json:"maxObjectSize,omitempty"`

	// memorySize is the memory that holds cached responses in each cache replica
	// (IIS MemCacheSize); the least recently used entries make room when it is full.
	//
	// +optional
	// +default="64Mi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('64Gi')) <= 0)",message="memorySize must be between 1Mi and 64Gi"
	MemorySize *resource.Quantity `json:"memorySize,omitempty"`

	// cacheQueryStrings caches responses to requests with a query string, keyed
	// by the full URI. Off by default, as in HTTP.sys.
	//
	// +optional
	// +default=false
	CacheQueryStrings *bool `json:"cacheQueryStrings,omitempty"`

	// clientCache sets expiry headers for browsers and proxies.
	//
	// +optional
	// +default={}
	ClientCache ClientCache `json:"clientCache,omitzero"`

	// replicas is the number of cache pods.
	//
	// +optional
	// +default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Replicas int32 `json:"replicas,omitempty"`

	// cpu is the CPU each cache replica requests and is limited to.
	//
	// +optional
	// +default="250m"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('10m')) >= 0 && quantity(string(self)).compareTo(quantity('64')) <= 0)",message="cpu must be between 10m and 64"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// placement says where the cache tier's pods run. Unset, they spread
	// over nodes and zones.
	//
	// +optional
	Placement Placement `json:"placement,omitzero"`
}

// ClientCache is the expiry header policy (IIS clientCache).
//
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || !(self.mode in ['UseMaxAge', 'UseExpires']) || has(self.maxAge)",message="maxAge is required for modes UseMaxAge and UseExpires"
type ClientCache struct {
	// mode is NoControl, DisableCache, UseMaxAge or UseExpires.
	//
	// +optional
	// +default="NoControl"
	Mode ClientCacheMode `json:"mode,omitempty"`

	// maxAge is the lifetime announced to clients.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !self.matches('^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$') || (duration(self) >= duration('1s') && duration(self) <= duration('8760h'))",message="clientCache maxAge must be between 1s and 8760h"
	MaxAge Duration `json:"maxAge,omitempty"`
}

// CachePolicyStatus is the observed state of a cache tier, with the counters of
// the IIS "Web Service Cache" performance object.
type CachePolicyStatus struct {
	// conditions are Ready, Degraded and Paused.
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

	// pools are the AppPools the cache tier fronts (from the routes that name it).
	//
	// +optional
	// +listType=set
	Pools []string `json:"pools,omitempty"`

	// ready is "ready/desired" for the cache pods.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Ready string `json:"ready,omitempty"`

	// hitPercent is hits as a share of all requests to the cache tier
	// (hits, misses and bypasses), since the tier was created.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	HitPercent string `json:"hitPercent,omitempty"`

	// counters are the cache tier's IIS "Web Service Cache" counters, summed
	// over its pods since the tier was created.
	//
	// +optional
	Counters *CacheCounters `json:"counters,omitempty"`

	// lastPurge is the last purge asked for with the webfarm.dev/purge annotation.
	//
	// +optional
	LastPurge *CachePurge `json:"lastPurge,omitempty"`

	// poolContent is the content revision of each pool behind the tier whose
	// entries are current: when a pool's content changes, its entries are
	// purged once its new content is served.
	//
	// +optional
	// +listType=map
	// +listMapKey=pool
	PoolContent []PoolContent `json:"poolContent,omitempty"`

	// objects is the number of responses held in the cache.
	//
	// +optional
	Objects *int64 `json:"objects,omitempty"`

	// memoryUsed is the cache memory in use.
	//
	// +optional
	MemoryUsed *resource.Quantity `json:"memoryUsed,omitempty"`
}

// CacheCounters count a cache tier's work (IIS "Web Service Cache").
type CacheCounters struct {
	// hits are requests answered from the cache (IIS "URI Cache Hits").
	//
	// +required
	Hits int64 `json:"hits"`
	// misses are cacheable requests that went to the pool (IIS "URI Cache Misses").
	//
	// +required
	Misses int64 `json:"misses"`
	// bypasses are requests the cache never keeps (a query string, Authorization,
	// a body, a method other than GET and HEAD) that went to the pool.
	//
	// +required
	Bypasses int64 `json:"bypasses"`
	// stored are entries added (IIS "Total URIs Cached").
	//
	// +required
	Stored int64 `json:"stored"`
	// evicted are entries removed unused for objectTTL, or least recently used
	// when memorySize was full.
	//
	// +required
	Evicted int64 `json:"evicted"`
	// flushed are entries removed by purges (IIS "Total Flushed URIs").
	//
	// +required
	Flushed int64 `json:"flushed"`
}

// CachePurge reports a purge.
type CachePurge struct {
	// token is the webfarm.dev/purge annotation's value the purge answered.
	//
	// +required
	Token string `json:"token"`
	// time is when the purge ended.
	//
	// +required
	Time metav1.Time `json:"time"`
	// entries is how many entries the purge removed.
	//
	// +required
	Entries int64 `json:"entries"`
}

// PoolContent is the content revision of a pool whose cached entries are current.
type PoolContent struct {
	// pool is the AppPool's name.
	//
	// +required
	Pool string `json:"pool"`
	// revision identifies the content the cached entries came from.
	//
	// +required
	Revision string `json:"revision"`
	// purgedAt is when the entries of the previous content were purged.
	//
	// +optional
	PurgedAt *metav1.Time `json:"purgedAt,omitempty"`
	// pending is a new revision whose purge waits until the pool serves it.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Pending string `json:"pending,omitempty"`
	// pendingSince is when the pending revision was first seen.
	//
	// +optional
	PendingSince *metav1.Time `json:"pendingSince,omitempty"`
}

// CachePolicy is an output cache tier (nginx) with IIS cache semantics, in front
// of the pools of the routes that name it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cp;cache,categories=web
// +kubebuilder:printcolumn:name="Threshold",type=integer,JSONPath=`.spec.frequentHitThreshold`
// +kubebuilder:printcolumn:name="TTL",type=string,JSONPath=`.spec.objectTTL`
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.spec.memorySize`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Hit %",type=string,JSONPath=`.status.hitPercent`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.status.objects`
// +kubebuilder:printcolumn:name="Memory Used",type=string,JSONPath=`.status.memoryUsed`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="a CachePolicy name may be at most 50 characters (its children add a suffix)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a CachePolicy name must be a DNS label (lowercase letters, digits and dashes, no dots): routes name it and its Service is named after it"
type CachePolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's name, namespace, labels and annotations.
	//
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	//
	// +optional
	// +default={}
	Spec CachePolicySpec `json:"spec,omitzero"`

	// status is the observed state, written by the operator.
	//
	// +optional
	Status CachePolicyStatus `json:"status,omitzero"`
}

// CachePolicyList is a list of CachePolicies.
//
// +kubebuilder:object:root=true
type CachePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CachePolicy `json:"items"`
}

func init() { SchemeBuilder.Register(&CachePolicy{}, &CachePolicyList{}) }
