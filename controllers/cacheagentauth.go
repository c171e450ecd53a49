package controllers

import (
	"context"

	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/vocabulary"
)

// The cache agents' admin endpoint (counters, purges) asks every request for
// a bearer token, since its port is reachable from every pod. Each tier's
// token is made once, at random, and kept in the tier's ConfigMap (in the
// agent's configuration file), so that every replica of the operator, and
// every restart, finds the same one. Whoever may read ConfigMaps in the
// namespace may read it; such a person may purge through the CachePolicy's
// annotation anyway.

// tierAgentToken is the token a tier keeps, or a new one for a tier that has
// none. A tier missing from the operator's cache is looked up on the API
// server before a new token is made: a cache that lags behind the tier's
// first write would otherwise change its token, and roll its pods.
func (r *CachePolicyReconciler) tierAgentToken(ctx context.Context, namespace, policy string) (string, error) {
	token, err := cacheadmin.AgentToken(ctx, r.Client, namespace, policy)
	if err != nil || token != "" {
		return token, err
	}
	if r.APIReader != nil {
		if token, err = cacheadmin.AgentToken(ctx, r.APIReader, namespace, policy); err != nil || token != "" {
			return token, err
		}
	}
	return vocabulary.NewAdminToken()
}
