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
// megacycles); nodes without it count at the operator's default.
const NodeMHzLabel = "webfarm.dev/cpu-mhz"

// Child object names. Parent names are limited to 50 characters by the CRDs,
// so each name stays a valid DNS label.
func FrontendName(farm string) string { return farm + "-frontend" }
func PoolName(pool string) string     { return pool + "-pool" }
func CacheName(policy string) string  { return policy + "-cache" }
