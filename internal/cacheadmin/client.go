// Package cacheadmin is the operator's side of the cache agents' admin API
// (internal/cacheagent serves it): their counters, purges, and each tier's
// bearer token.
package cacheadmin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"webfarm.dev/operator/internal/vocabulary"
)

// Client speaks the agents' admin API for the operator: their counters and
// purges, each request with the tier's bearer token.
type Client struct {
	// HTTP reaches the agents (nil: http.DefaultClient).
	HTTP *http.Client
	// Port is where the agents serve their admin API.
	Port int32
}

// Stats reads the counters of the agent at ip.
func (c Client) Stats(ctx context.Context, ip, token string) (vocabulary.AgentStats, error) {
	var st vocabulary.AgentStats
	resp, err := c.do(ctx, http.MethodGet, c.url(ip, vocabulary.AgentStatsPath), token, http.StatusOK)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Purge asks the agent at ip to purge a pool's entries ("" for all) and
// returns how many it removed.
func (c Client) Purge(ctx context.Context, ip, token, pool string) (int64, error) {
	u := c.url(ip, vocabulary.AgentPurgePath)
	if pool != "" {
		u += "?pool=" + url.QueryEscape(pool)
	}
	resp, err := c.do(ctx, http.MethodPost, u, token, http.StatusNoContent)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return strconv.ParseInt(resp.Header.Get(vocabulary.AgentPurgedHeader), 10, 64)
}

func (c Client) url(ip, path string) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(int(c.Port))) + path
}

// do sends a request with the token and takes only the status want.
func (c Client) do(ctx context.Context, method, u, token string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s", method, u, resp.Status)
	}
	return resp, nil
}

// AgentToken is the admin token of a policy's cache tier, read from its
// ConfigMap; "" while there is none (no tier yet, or a file someone broke).
func AgentToken(ctx context.Context, c client.Reader, namespace, policy string) (string, error) {
	var cm corev1.ConfigMap
	switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: vocabulary.CacheName(policy)}, &cm); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	return vocabulary.AdminTokenOf(cm.Data[vocabulary.AgentConfigFile]), nil
}
