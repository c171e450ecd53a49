//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/activator"
	"webfarm.dev/operator/test/e2e/framework"
)

// startupReportBound is how soon after its manifest is applied a workload
// that cannot start must say why on its custom resource: the kubelet or the
// scheduler reports the cause within seconds, and the operator passes it on
// at once.
const startupReportBound = 60 * time.Second

// brokenPool is a pool of the test application with one line of its spec
// changed to make its workers unable to start.
func brokenPool(name, image, args, cpu string, extra ...string) string {
	spec := []string{
		"app:",
		"  image: " + image,
		"  args: " + args,
		"  port: 9000",
		"replicas: 1",
		"cpu: " + cpu,
		"memory: 64Mi",
		"healthCheck: {path: /healthz, interval: 2s}",
	}
	return fmt.Sprintf("apiVersion: webfarm.dev/v1alpha1\nkind: AppPool\nmetadata: {name: %s}\nspec:\n  %s\n---\n",
		name, strings.Join(append(spec, extra...), "\n  "))
}

const (
	testAppImage = "localhost/webfarm-client:dev"
	testAppArgs  = "[webfarm-testapp, --listen=:9000]"
)

// The ordinary mistakes, made on purpose at once in one namespace: an image
// that does not exist, a program that does not exist, an app that listens on
// another port than its pool says, a worker too big for the node, content
// that does not exist, content without the file its health check asks for,
// a frontend and a cache tier too big for the node.
var brokenFarm = brokenPool("no-image", "localhost/webfarm-does-not-exist:dev", testAppArgs, "50m") +
	brokenPool("no-program", testAppImage, "[webfarm-no-such-program]", "50m",
		"rapidFailProtection: {enabled: false}   # its crashes would stop the pool before its fix") +
	strings.Replace(brokenPool("wrong-port", testAppImage, "[webfarm-testapp, --listen=:9001]", "50m",
		"rapidFailProtection: {enabled: false}   # the restarts would stop the pool before its fix"),
		"interval: 2s}", "interval: 2s, startupTimeLimit: 3s}", 1) +
	brokenPool("too-big", testAppImage, testAppArgs, "8") +
	`apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: no-content}
spec:
  content: {configMap: {name: site-files}}
  replicas: 1
  cpu: 50m
  memory: 32Mi
---
apiVersion: v1
kind: ConfigMap
metadata: {name: pages}
data: {page.html: "a page, and no index"}
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: no-index}
spec:
  content: {configMap: {name: pages}}
  replicas: 1
  cpu: 50m
  memory: 32Mi                            # its check asks for "/": no index.html
---
apiVersion: webfarm.dev/v1alpha1
kind: CachePolicy
metadata: {name: big-cache}
spec:
  replicas: 1
  cpu: "8"
  memorySize: 8Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: broken}
spec:
  sites:
  - name: main
    hosts: [broken.example]
    routes:
    - {pathPrefix: /, appPool: no-content, cachePolicy: big-cache}
    - {pathPrefix: /image, appPool: no-image}
    - {pathPrefix: /program, appPool: no-program}
    - {pathPrefix: /big, appPool: too-big}
    - {pathPrefix: /port, appPool: wrong-port}
    - {pathPrefix: /pages, appPool: no-index}
  frontend:
    replicas: 1
    cpu: "8"
`

// readyCondition is an object's Ready status, reason and message.
func readyCondition(t *testing.T, ns, object string) (status, reason, message string) {
	t.Helper()
	out := cluster.Run(t, "get", object, "-n", ns, "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.status.conditions[?(@.type=="Ready")].reason}|{.status.conditions[?(@.type=="Ready")].message}`)
	f := strings.SplitN(out, "|", 3)
	if len(f) < 3 {
		return "", "", ""
	}
	return f[0], f[1], f[2]
}

// warningCount is the number of Warning events of one reason about one object.
func warningCount(t *testing.T, ns, name, reason string) int {
	t.Helper()
	out := cluster.Run(t, "get", "events", "-n", ns, "-o", "name",
		"--field-selector", "type=Warning,reason="+reason+",involvedObject.name="+name)
	return len(strings.Fields(out))
}

// Each workload that cannot start says why on its own resource within the
// bound, with its own reason, the cause in the cluster's words, one Warning
// event, the Reason column and the webfarm_startup_blocked metric; a
// request for a pool that cannot start gets a 503 that says so at once, not
// after the activator's minute; each clears once its mistake is fixed, and
// the fixed farm serves.
func TestWorkloadsThatCannotStartSayWhyAndRecoverWhenFixed(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	applied := time.Now()
	cluster.Apply(t, ns, brokenFarm)

	cases := []struct {
		object, reason string
		words          []string
	}{
		{"apppool/no-image", "ImagePullFailed", []string{`image "localhost/webfarm-does-not-exist:dev" of container app cannot be pulled`}},
		{"apppool/no-program", "ContainerCannotStart", []string{"container app cannot start", "webfarm-no-such-program"}},
		{"apppool/too-big", "Unschedulable", []string{"cannot be scheduled", "Insufficient cpu"}},
		{"apppool/wrong-port", "StartupCheckFailed", []string{"container app was restarted", "without passing its startup check (GET /healthz on port app, within 3s)"}},
		{"apppool/no-index", "InvalidReference", []string{`content ConfigMap "pages" has no index.html or index.htm, which the health check's GET / asks for`, "(such as /page.html)"}},
		{"apppool/no-content", "InvalidReference", []string{`content ConfigMap "site-files" does not exist in namespace ` + ns}},
		{"cachepolicy/big-cache", "Unschedulable", []string{"cache: pod big-cache-cache-", "Insufficient cpu"}},
		{"webfarm/broken", "Unschedulable", []string{"frontend: pod broken-frontend-", "Insufficient cpu"}},
	}
	for _, c := range cases {
		framework.Eventually(t, startupReportBound-time.Since(applied), func() error {
			status, reason, message := readyCondition(t, ns, c.object)
			if status != "False" || reason != c.reason {
				return fmt.Errorf("%s is Ready=%s %s (%s), want False %s", c.object, status, reason, message, c.reason)
			}
			for _, w := range c.words {
				if !strings.Contains(message, w) {
					return fmt.Errorf("%s says %q, without %q", c.object, message, w)
				}
			}
			return nil
		})
		t.Logf("%s: %s within %s of the apply", c.object, c.reason, time.Since(applied).Round(time.Second))
	}
	for _, c := range cases {
		name := c.object[strings.Index(c.object, "/")+1:]
		framework.Eventually(t, 30*time.Second, func() error {
			if n := warningCount(t, ns, name, c.reason); n != 1 {
				return fmt.Errorf("%d %s Warning events about %s, want 1", n, c.reason, c.object)
			}
			return nil
		})
	}
	if table := cluster.Run(t, "get", "apppools", "-n", ns); !strings.Contains(table, "ImagePullFailed") || !strings.Contains(table, "Unschedulable") {
		t.Errorf("kubectl get apppools does not show the reasons:\n%s", table)
	}
	cluster.EventuallyQuery(t, time.Minute, fmt.Sprintf(`webfarm_startup_blocked{namespace=%q} == 1`, ns), func(s []framework.Sample) error {
		got := map[string]string{}
		for _, x := range s {
			got[x.Labels["kind"]+"/"+x.Labels["name"]] = x.Labels["reason"]
		}
		want := map[string]string{"AppPool/no-image": "ImagePullFailed", "AppPool/no-program": "ContainerCannotStart",
			"AppPool/too-big": "Unschedulable", "AppPool/wrong-port": "StartupCheckFailed", "CachePolicy/big-cache": "Unschedulable", "WebFarm/broken": "Unschedulable"}
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("webfarm_startup_blocked: %v, want %v", got, want)
			}
		}
		return nil
	})

	// Each mistake fixed as a user would; the frontend first, to ask the
	// pools that cannot start yet.
	patch := func(object, json string) { cluster.Run(t, "patch", object, "-n", ns, "--type", "merge", "-p", json) }
	patch("webfarm/broken", `{"spec":{"frontend":{"cpu":"100m"}}}`)
	cluster.Run(t, "rollout", "status", "-n", ns, "deployment/broken-frontend", "--timeout=2m")
	url := cluster.ServiceURL(t, ns, "broken-frontend")
	for _, route := range []string{"/image", "/program", "/big", "/port", "/pages"} {
		framework.Eventually(t, 30*time.Second, func() error { // the routes reach the new Envoy
			r, err := framework.HTTPGet(url+route, "Host: broken.example") // a held request would outlast its 2 s
			if err != nil {
				return err
			}
			if r.Status != http.StatusServiceUnavailable || r.Body != activator.CannotStartBody {
				return fmt.Errorf("%s answered %d %q, want 503 %q", route, r.Status, r.Body, activator.CannotStartBody)
			}
			return nil
		})
	}
	patch("apppool/no-image", `{"spec":{"app":{"image":"`+testAppImage+`"}}}`)
	patch("apppool/no-program", `{"spec":{"app":{"args":["webfarm-testapp","--listen=:9000"]}}}`)
	patch("apppool/too-big", `{"spec":{"cpu":"50m"}}`)
	patch("apppool/wrong-port", `{"spec":{"app":{"args":["webfarm-testapp","--listen=:9000"]}}}`)
	patch("apppool/no-index", `{"spec":{"healthCheck":{"path":"/page.html"}}}`)
	patch("cachepolicy/big-cache", `{"spec":{"cpu":"50m"}}`)
	cluster.Apply(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site-files}\ndata: {index.html: fixed}\n")
	cluster.WaitReady(t, ns, 3*time.Minute, "apppool/no-image", "apppool/no-program", "apppool/too-big", "apppool/wrong-port", "apppool/no-index", "apppool/no-content",
		"cachepolicy/big-cache", "webfarm/broken")
	for _, c := range cases {
		if status, reason, message := readyCondition(t, ns, c.object); status != "True" {
			t.Errorf("%s after its fix: Ready=%s %s: %s", c.object, status, reason, message)
		}
	}
	cluster.EventuallyQuery(t, time.Minute, fmt.Sprintf(`webfarm_startup_blocked{namespace=%q}`, ns), func(s []framework.Sample) error {
		if len(s) != 0 {
			return fmt.Errorf("%d blocked series left after the fixes: %v", len(s), s)
		}
		return nil
	})
	framework.ExpectBody(t, time.Minute, url+"/", "fixed", "Host: broken.example")
	for _, pool := range []string{"image", "program", "big", "port"} {
		framework.ExpectBody(t, time.Minute, url+"/"+pool, "app on ", "Host: broken.example")
	}
	framework.ExpectBody(t, time.Minute, url+"/pages/page.html", "a page, and no index", "Host: broken.example")
}

// freeMilliCPU is the CPU the node has left for new pods: its allocatable
// CPU less what the pods placed on it request.
func freeMilliCPU(t *testing.T) int64 {
	t.Helper()
	allocatable := milli(t, cluster.Run(t, "get", "nodes", "-o", "jsonpath={.items[0].status.allocatable.cpu}"))
	out := cluster.Run(t, "get", "pods", "-A", "--field-selector", "status.phase!=Succeeded,status.phase!=Failed,spec.nodeName!=", "-o",
		`jsonpath={range .items[*]}{range .spec.containers[*]}{.resources.requests.cpu}{"\n"}{end}{end}`)
	for _, q := range strings.Fields(out) {
		allocatable -= milli(t, q)
	}
	return allocatable
}

func milli(t *testing.T, q string) int64 {
	t.Helper()
	if v, ok := strings.CutSuffix(q, "m"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("CPU quantity %q: %v", q, err)
		}
		return n
	}
	n, err := strconv.ParseFloat(q, 64)
	if err != nil {
		t.Fatalf("CPU quantity %q: %v", q, err)
	}
	return int64(n * 1000)
}

// On a node with room for one worker but not two, an update of a pool
// cannot start its surge worker: the pool says RolloutStalled and keeps
// serving with its old worker; rollout.maxSurge 0 and maxUnavailable 1 let
// the same update finish in place.
func TestAnUpdateOnAFullNodeIsReportedAndAnInPlaceRolloutFinishesIt(t *testing.T) {
	ns := cluster.Namespace(t)
	// Pods of earlier tests still going would free their CPU later.
	cluster.WaitForNodeFree(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pods:\n%s\nnode:\n%s", cluster.Run(t, "get", "pods", "-A", "-o", "wide"),
				cluster.Run(t, "describe", "nodes"))
		}
	})
	// A worker of an app pool asks for cpu plus a quarter of it for its nginx
	// (at least 50m): size it to 9/10 of what is free once the farm's
	// frontend (100m) runs, so one worker fits and two do not.
	free := freeMilliCPU(t) - 100
	cpu := free * 18 / 25
	if cpu < 200 {
		t.Fatalf("the node has %dm CPU free, too little to fill it with one worker of 200m or more", free)
	}
	t.Logf("node has %dm CPU free: a worker of %dm app CPU (+%dm nginx) fits once", free, cpu, cpu/4)
	cluster.Apply(t, ns, brokenPool("full", testAppImage, testAppArgs, fmt.Sprintf("%dm", cpu))+oneRouteFarm("full", "full.example", "full"))
	cluster.WaitReady(t, ns, 3*time.Minute, "apppool/full", "webfarm/full")
	url := cluster.ServiceURL(t, ns, "full-frontend")
	framework.ExpectBody(t, time.Minute, url+"/", "app on full-", "Host: full.example")
	if left := freeMilliCPU(t); left >= cpu+cpu/4 {
		t.Fatalf("%dm CPU left with the worker running: room for a second worker of %dm, the update would not stall", left, cpu+cpu/4)
	}

	updated := time.Now()
	cluster.Run(t, "patch", "apppool/full", "-n", ns, "--type", "merge", "-p", `{"spec":{"app":{"env":[{"name":"RELEASE","value":"2"}]}}}`)
	framework.Eventually(t, startupReportBound, func() error {
		status, reason, message := readyCondition(t, ns, "apppool/full")
		if status != "True" || reason != "RolloutStalled" || !strings.Contains(message, "Insufficient cpu") || !strings.Contains(message, "1/1 replicas ready keep serving") {
			return fmt.Errorf("apppool/full is Ready=%s %s: %s; want True RolloutStalled", status, reason, message)
		}
		return nil
	})
	t.Logf("RolloutStalled within %s of the update", time.Since(updated).Round(time.Second))
	if got := cluster.Run(t, "get", "apppool/full", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Degraded")].reason}`); got != "RolloutStalled" {
		t.Errorf("Degraded reason %q, want RolloutStalled", got)
	}
	framework.ExpectBody(t, 10*time.Second, url+"/", "app on full-", "Host: full.example")

	cluster.Run(t, "patch", "apppool/full", "-n", ns, "--type", "merge", "-p", `{"spec":{"rollout":{"maxSurge":0,"maxUnavailable":1}}}`)
	framework.Eventually(t, 3*time.Minute, func() error {
		status, reason, message := readyCondition(t, ns, "apppool/full")
		if status != "True" || reason != "Available" {
			return fmt.Errorf("apppool/full is Ready=%s %s: %s; want True Available", status, reason, message)
		}
		env := cluster.Run(t, "get", "deployment", "full-pool", "-n", ns, "-o", `jsonpath={.status.updatedReplicas}/{.status.replicas}`)
		if env != "1/1" {
			return fmt.Errorf("updated/replicas %s, want 1/1", env)
		}
		return nil
	})
	framework.ExpectBody(t, time.Minute, url+"/", "app on full-", "Host: full.example")
}
