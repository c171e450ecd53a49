package cacheagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
func (c Client) Stats(ctx context.Context, ip, token string) (Stats, error) {
	var st Stats
	resp, err := c.do(ctx, http.MethodGet, c.url(ip, StatsPath), token, http.StatusOK)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Purge asks the agent at ip to purge a pool's entries ("" for all) and
// returns how many it removed.
func (c Client) Purge(ctx context.Context, ip, token, pool string) (int64, error) {
	u := c.url(ip, PurgePath)
	if pool != "" {
		u += "?pool=" + url.QueryEscape(pool)
	}
	resp, err := c.do(ctx, http.MethodPost, u, token, http.StatusNoContent)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return strconv.ParseInt(resp.Header.Get(PurgedHeader), 10, 64)
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

// NewAdminToken is a new tier's admin token: 32 random bytes in hex.
func NewAdminToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
