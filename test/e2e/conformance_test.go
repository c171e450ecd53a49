//go:build e2e

package e2e

import (
	"testing"

	"webfarm.dev/operator/test/conformance"
)

// The upstream Gateway API conformance suite's GATEWAY-HTTP profile
// (test/conformance), beside the other waiting tests: its Gateways, routes
// and backends live in the suite's own namespaces and GatewayClass, and its
// frontends ask 50m each. It writes docs/gateway-api-conformance.md.
func TestGatewayAPIConformance(t *testing.T) {
	t.Parallel() // it mostly waits for routes to be served
	conformance.RunSuite(t, cluster, "make test-e2e")
}
