//go:build e2e

// The end-to-end suite: the operator installed by its Helm chart on the local
// single-node cluster, serving real farms. Run with `make test-e2e` (root
// needed; part of `make test`). The cluster comes up once per run and is torn
// down on success, failure, interrupt (Ctrl-C, SIGTERM) and before the
// -timeout would kill the binary (framework.Main).
package e2e

import (
	"os"
	"testing"

	"webfarm.dev/operator/test/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "e2e", framework.Options{Monitoring: true, SignedRelease: true, NetworkPolicy: true},
		func(c *framework.Cluster) { cluster = c }))
}
