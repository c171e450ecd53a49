package v1alpha1_test

import (
	"testing"
)

func TestCachePolicyManifests(t *testing.T) { checkManifests(t, "CachePolicy", cachePolicyCases) }

// cachePolicyCases are CachePolicy manifests, each the base CachePolicy
// (bases) with a patch, and what the API server answers.
var cachePolicyCases = []manifestCase{
	refused("a frequent-hit threshold of 0 is refused", `spec: {frequentHitThreshold: 0}`, "spec.frequentHitThreshold", "should be greater than or equal to 1"),
	refused("a frequent-hit period written in days is refused", `spec: {frequentHitPeriod: 1d}`, `spec.frequentHitPeriod: Invalid value: "1d"`, "should match"),
	refused("an object TTL of 0s is refused", `spec: {objectTTL: 0s}`, "spec.objectTTL", "objectTTL must be between 1s and 720h"),
	refused("a maxObjectSize larger than memorySize is refused", `spec: {maxObjectSize: 8Mi, memorySize: 4Mi}`, "maxObjectSize must not exceed memorySize"),
	refused("a maxObjectSize larger than the default memorySize is refused", `spec: {maxObjectSize: 128Mi}`, "maxObjectSize must not exceed memorySize"),
	refused("a memorySize above 64Gi is refused", `spec: {memorySize: 128Gi}`, "spec.memorySize", "memorySize must be between 1Mi and 64Gi"),
	refused("a clientCache mode Always is refused", `spec: {clientCache: {mode: Always}}`, `spec.clientCache.mode: Unsupported value: "Always"`, `"NoControl", "DisableCache", "UseMaxAge", "UseExpires"`),
	refused("clientCache mode UseMaxAge without maxAge is refused", `spec: {clientCache: {mode: UseMaxAge}}`, "spec.clientCache", "maxAge is required for modes UseMaxAge and UseExpires"),
	refused("clientCache mode UseExpires without maxAge is refused", `spec: {clientCache: {mode: UseExpires}}`, "spec.clientCache", "maxAge is required for modes UseMaxAge and UseExpires"),
	refused("zero cache replicas are refused", `spec: {replicas: 0}`, "spec.replicas", "should be greater than or equal to 1"),
	refused("an empty object TTL is refused", `spec: {objectTTL: ""}`, "spec.objectTTL", "should be at least 1 chars long"),
	refused("a cache memory size that is not a quantity gets only the quantity error", `spec: {memorySize: lots}`, `spec.memorySize: Invalid value: "lots"`, "should match"),
	refused("a cache CPU of 0 is refused", `spec: {cpu: 0}`, "spec.cpu", "cpu must be between 10m and 64"),
	refused("a CachePolicy name with a dot is refused", `metadata: {name: shop.cache}`, "a CachePolicy name must be a DNS label"),
	refused("a CachePolicy name longer than 50 characters is refused", `metadata: {name: `+tooLongName+`}`, "a CachePolicy name may be at most 50 characters"),
	// Accepted.
	accepted("a CachePolicy without a spec is accepted", `{}`),
	accepted("a CachePolicy with tuned IIS settings is accepted", `
		spec:
		  frequentHitThreshold: 1
		  frequentHitPeriod: 1m
		  objectTTL: 180s
		  maxObjectSize: 1Mi
		  memorySize: 1Gi
		  cacheQueryStrings: true
		  clientCache: {mode: UseMaxAge, maxAge: 24h}
		  replicas: 3
		  cpu: 500m
	`),
	accepted("a CachePolicy whose largest object fills its memory and that sets Expires is accepted", `spec: {maxObjectSize: 1Mi, memorySize: 1Mi, clientCache: {mode: UseExpires, maxAge: 1h30m}}`),
}
