package controllers

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/cacheagent"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
)

// The cache agents' admin endpoint (counters, purges) asks every request for
// a bearer token, since its port is reachable from every pod. Each tier's
// token is made once, at random, and kept in the tier's ConfigMap (in the
// agent's configuration file), so that every replica of the operator, and
// every restart, finds the same one. Whoever may read ConfigMaps in the
// namespace may read it; such a person may purge through the CachePolicy's
// annotation anyway.

// agentToken is the admin token of a policy's cache tier, read from its
// ConfigMap; "" while there is none (no tier yet, or a file someone broke).
func agentToken(ctx context.Context, c client.Reader, namespace, policy string) (string, error) {
	var cm corev1.ConfigMap
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: k8s.CacheName(policy)}, &cm); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	var cfg cacheagent.Config
	if err := json.Unmarshal([]byte(cm.Data[nginx.AgentConfigFile]), &cfg); err != nil || len(cfg.AdminToken) < cacheagent.MinAdminTokenLength {
		return "", nil
	}
	return cfg.AdminToken, nil
}

// tierAgentToken is the token a tier keeps, or a new one for a tier that has
// none. A tier missing from the operator's cache is looked up on the API
// server before a new token is made: a cache that lags behind the tier's
// first write would otherwise change its token, and roll its pods.
func (r *CachePolicyReconciler) tierAgentToken(ctx context.Context, namespace, policy string) (string, error) {
	token, err := agentToken(ctx, r.Client, namespace, policy)
	if err != nil || token != "" {
		return token, err
	}
	if r.APIReader != nil {
		if token, err = agentToken(ctx, r.APIReader, namespace, policy); err != nil || token != "" {
			return token, err
		}
	}
	return cacheagent.NewAdminToken()
}
