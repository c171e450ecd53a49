//go:build conformance

// `make test-conformance`: the Gateway API conformance run alone, on the
// local cluster with the operator's release (neither Prometheus nor
// signatures: the suite reads neither). The end-to-end suite runs the same
// (RunSuite) beside its other waiting tests.
package conformance

import (
	"os"
	"testing"

	"webfarm.dev/operator/test/e2e/framework"
)

var local *framework.Cluster

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "conformance", framework.Options{}, func(c *framework.Cluster) { local = c }))
}

func TestGatewayAPIConformance(t *testing.T) { RunSuite(t, local, "make test-conformance") }
