package v1alpha1

// Defaults that the model applies when a field is empty (objects built in code
// skip the API server's defaulting). They equal the +kubebuilder:default markers;
// a test against the real API server keeps the two in step.
const (
	DefaultFrontendReplicas   = 2
	DefaultFrontendMaxScale   = 4
	DefaultFrontendPort       = 80
	DefaultFrontendHTTPSPort  = 443
	DefaultTLSMinVersion      = "1.2"
	DefaultCookieSameSite     = "Lax"
	DefaultConnectionTimeout  = "120s"
	DefaultRequestTimeout     = "120s"
	DefaultWebSocketIdle      = "300s"
	DefaultHeadersTimeout     = "10s"
	DefaultBodyTimeout        = "120s"
	DefaultMaxHeadersKiB      = 16
	DefaultFrontendCPU        = "500m"
	DefaultFrontendMemory     = "256Mi"
	DefaultAffinityCookieName = "WEBFARM_AFFINITY"
	DefaultAccessLogPercent   = 100
	DefaultPathPrefix         = "/"
	DefaultPoolReplicas       = 2
	DefaultRolloutMaxSurge    = 1
	DefaultPoolCPU            = "500m"
	DefaultPoolMemory         = "128Mi"
	DefaultMaxConcurrent      = 100
	DefaultQueueLength        = 1000
	DefaultHealthPath         = "/"
	DefaultHealthInterval     = "30s"
	DefaultHealthTimeout      = "5s"
	DefaultHealthFailures     = 3
	DefaultPingInterval       = "30s"
	DefaultPingResponseTime   = "90s"
	DefaultStartupTimeLimit   = "90s"
	DefaultShutdownTimeLimit  = "90s"
	DefaultRapidFailMax       = 5
	DefaultRapidFailInterval  = "5m"
	DefaultIdleTimeout        = "20m"
	DefaultRecycleInterval    = "29h"
	DefaultMinReplicas        = 1
	DefaultMaxReplicas        = 10
	DefaultTargetCPUPercent   = 30
	DefaultStabilization      = "300s"
	DefaultImageContentPath   = "/content"
	DefaultHitThreshold       = 2
	DefaultHitPeriod          = "10s"
	DefaultObjectTTL          = "30s"
	DefaultMaxObjectSize      = "256Ki"
	DefaultCacheMemory        = "64Mi"
	DefaultCacheReplicas      = 2
	DefaultCacheCPU           = "250m"
)
