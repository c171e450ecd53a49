package vocabulary

// Labels and annotations on generated objects.
const (
	LabelName         = "app.kubernetes.io/name"
	LabelInstance     = "app.kubernetes.io/instance"
	LabelComponent    = "app.kubernetes.io/component"
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	ManagedBy         = "webfarm-operator"
	ConfigHashKey     = "webfarm.dev/config-hash"
	ComponentFrontend = "frontend"
	ComponentPool     = "pool"
	ComponentCache    = "cache"
)

// NodeMHzLabel on a Node gives the clock rate of its processors in MHz, so
// that the autoscaler counts a worker's CPU in cycles (seed 000's
// megacycles) and the frontends send each worker its node's share of a
// pool's requests; nodes without it count at the operator's default.
const NodeMHzLabel = "webfarm.dev/cpu-mhz"

// DefaultNodeMHz is the clock rate assumed for a node that does not label
// its own (unless the operator is told another): a typical server core of
// today.
const DefaultNodeMHz = 2000

// Child object names. Parent names are limited to 50 characters by the CRDs,
// so each name stays a valid DNS label.
func FrontendName(farm string) string { return farm + "-frontend" }
func PoolName(pool string) string     { return pool + "-pool" }
func CacheName(policy string) string  { return policy + "-cache" }

// FrontendIdentityName is the Secret of a farm's control identity (a DNS
// subdomain, as Secret names are, not a label).
func FrontendIdentityName(farm string) string { return farm + "-frontend-identity" }

// Keys of a farm's identity Secret: its certificate and key as a
// kubernetes.io/tls Secret holds them, and the CA the operator's serving
// certificate is verified by.
const (
	IdentityCertKey = "tls.crt"
	IdentityKeyKey  = "tls.key"
	IdentityCAKey   = "ca.crt"
)
