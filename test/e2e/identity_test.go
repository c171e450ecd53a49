//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// A pool whose app takes a value from a Secret the operator never reads.
var identityFarm = `apiVersion: v1
kind: Secret
metadata: {name: greeting}
stringData: {text: hello from a Secret}
---
` + testAppPool("secretive", 1, "identity: {mountAPIToken: false}") + oneRouteFarm("identity", "identity.example", "secretive")

// A pool's workers run as the pool's own ServiceAccount, without an API
// token, and its app reads a value from a Secret through valueFrom and as a
// file of a Secret volume.
func TestAPoolsAppRunsAsThePoolAndReadsASecret(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, identityFarm)
	cluster.Run(t, "patch", "apppool", "secretive", "-n", ns, "--type", "merge", "-p",
		`{"spec":{"app":{"env":[{"name":"GREETING","valueFrom":{"secretKeyRef":{"name":"greeting","key":"text"}}}],`+
			`"volumes":[{"name":"greeting","mountPath":"/etc/greeting","secret":{"name":"greeting"}}]}}}`)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/identity", "apppool/secretive")
	front := cluster.ServiceURL(t, ns, "identity-frontend")
	framework.ExpectBody(t, 2*time.Minute, front+"/?env=GREETING", "GREETING=hello from a Secret", "Host: identity.example")
	// The same Secret mounted as files, read-only, by the kubelet.
	framework.ExpectBody(t, 2*time.Minute, front+"/?file=/etc/greeting/text", "/etc/greeting/text=hello from a Secret", "Host: identity.example")
	mounts := cluster.Run(t, "get", "deployment", "secretive-pool", "-n", ns, "-o",
		`jsonpath={.spec.template.spec.containers[?(@.name=="app")].volumeMounts[?(@.name=="app-greeting")].readOnly}`)
	if mounts != "true" {
		t.Errorf("the app mounts the Secret read-only %q, want true", mounts)
	}

	pods := cluster.Run(t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=secretive,app.kubernetes.io/component=pool", "-o",
		`jsonpath={range .items[*]}{.spec.serviceAccountName} {.spec.automountServiceAccountToken} {.spec.volumes[*].projected}{"\n"}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(pods), "\n") {
		if f := strings.Fields(line); len(f) < 2 || f[0] != "secretive-pool" || f[1] != "false" || len(f) > 2 {
			t.Errorf("worker runs as %q: want ServiceAccount secretive-pool with no API token mounted", line)
		}
	}
	if sa := cluster.Run(t, "get", "serviceaccount", "secretive-pool", "-n", ns, "-o", "jsonpath={.automountServiceAccountToken}"); sa != "false" {
		t.Errorf("ServiceAccount secretive-pool automountServiceAccountToken %q, want false", sa)
	}
}
