//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
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

// oneRouteFarm is a WebFarm with one small frontend replica that sends every
// request for host to pool.
func oneRouteFarm(name, host, pool string) string {
	return pathFarm(name, host, "100m", [2]string{"/", pool})
}

// pathFarm is a WebFarm with one frontend replica of cpu whose site, main,
// serves host with these routes in order, each a path prefix and its pool.
func pathFarm(name, host, cpu string, routes ...[2]string) string {
	var lines []string
	for _, r := range routes {
		lines = append(lines, fmt.Sprintf("    - {pathPrefix: %s, appPool: %s}", r[0], r[1]))
	}
	return fmt.Sprintf(`apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: %s}
spec:
  sites:
  - name: main
    hosts: [%s]
    routes:
%s
  frontend:
    replicas: 1
    cpu: %s
`, name, host, strings.Join(lines, "\n"), cpu)
}

// expectPoolMetric waits until Prometheus has the operator's metric of a
// pool meeting cond, a PromQL comparison such as "== 14" or "> 0".
func expectPoolMetric(t *testing.T, metric, ns, pool, cond string) {
	t.Helper()
	expr := fmt.Sprintf(`%s{namespace=%q,pool=%q} %s`, metric, ns, pool, cond)
	cluster.EventuallyQuery(t, time.Minute, expr, func(s []framework.Sample) error {
		if len(s) != 1 {
			return fmt.Errorf("%s: samples %v, want one", expr, s)
		}
		return nil
	})
}
