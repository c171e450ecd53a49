//go:build e2e

package e2e

import (
	"fmt"
	"strings"
)

// testAppPool is the manifest of an AppPool running the test application
// (test/testapp, in the client image) in 50m workers health-checked every
// 2 s at /healthz (which the application does not count as a request).
// Each extra line is a further field of the spec, as YAML.
func testAppPool(name string, replicas int, extra ...string) string {
	spec := []string{
		"app:",
		"  image: localhost/webfarm-client:dev",
		"  args: [webfarm-testapp, --listen=:9000]",
		"  port: 9000",
		fmt.Sprintf("replicas: %d", replicas),
		"cpu: 50m",
		"memory: 64Mi",
		"healthCheck: {path: /healthz, interval: 2s}",
	}
	return fmt.Sprintf("apiVersion: webfarm.dev/v1alpha1\nkind: AppPool\nmetadata: {name: %s}\nspec:\n  %s\n---\n",
		name, strings.Join(append(spec, extra...), "\n  "))
}
