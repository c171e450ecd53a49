//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// hostingSites is how many sites the hosting test's farm starts with; its
// content holds one more folder, for the site it adds.
const hostingSites = 50

// hostingContent writes a folder per site (sites/site-NN: its own
// index.html and 404 page) into a folder of this host that the node mounts
// as the pool's content (the local cluster runs on this host): a hostPath
// volume, bound to the test's claim alone, stands in for a storage class.
func hostingContent(t *testing.T) string {
	t.Helper()
	// The workers' health check asks for "/": the content root's index.
	files := map[string]string{"index.html": "the pool's root\n"}
	for i := 1; i <= hostingSites+1; i++ {
		site := "sites/" + siteName(i) + "/"
		files[site+"index.html"] = siteName(i) + " home\n"
		files[site+"errors/404.html"] = siteName(i) + " has no such page\n"
	}
	return hostFolder(t, "webfarm-e2e-sites-", files)
}

// hostFolder writes files (by slash-separated path) into a new folder of
// this host, named after pattern and removed after the test, and returns
// it. The workers' nginx runs as a user of its own: every folder is open to
// it.
func hostFolder(t *testing.T, pattern string, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			err = os.Chmod(path, 0o755)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func siteName(i int) string { return fmt.Sprintf("site-%02d", i) }

// hostingSite is a site of the farm: its own host, its own folder of the
// pool's content and its own 404 page.
func hostingSite(i int) string {
	return fmt.Sprintf(`  - name: %[1]s
    hosts: [%[1]s.example]
    routes:
    - appPool: sites
      content: {directory: sites/%[1]s, errorPages: [{statusCode: 404, path: /errors/404.html}]}
`, siteName(i))
}

func hostingFarm(sites int) string {
	var b strings.Builder
	b.WriteString(`apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: hosting}
spec:
  frontend: {replicas: 1, cpu: 200m}
  sites:
`)
	for i := 1; i <= sites; i++ {
		b.WriteString(hostingSite(i))
	}
	return b.String()
}

// poolState is what a change of a pool's workers would change: their pods
// (names, UIDs, restarts), the Deployment's generation and pod template,
// and the pool's ConfigMap (nginx.conf).
func poolState(t *testing.T, ns, pool string) string {
	t.Helper()
	pods := cluster.Run(t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance="+pool+",app.kubernetes.io/name=webfarm-pool", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.containerStatuses[*].restartCount}{"\n"}{end}`)
	deployment := cluster.Run(t, "get", "deployment", "-n", ns, pool+"-pool", "-o", `jsonpath={.metadata.generation} {.spec.template.metadata.annotations}`)
	config := cluster.Run(t, "get", "configmap", "-n", ns, pool+"-pool", "-o", `jsonpath={.metadata.resourceVersion} {.data.nginx\.conf}`)
	return "pods:\n" + pods + "\ndeployment: " + deployment + "\nconfigmap: " + config
}

// runsTheConfigurationServed waits until the farm's status says every
// frontend runs the routing configuration served, a version other than
// previous, and ConfigAccepted is True; it returns that version.
func runsTheConfigurationServed(t *testing.T, ns, farm, previous string) string {
	t.Helper()
	var version string
	framework.Eventually(t, 2*time.Minute, func() error {
		out, err := cluster.Kubectl.Run(context.Background(), "get", "webfarm", "-n", ns, farm, "-o",
			`jsonpath={.status.frontendConfig.version}|{.status.frontendConfig.frontends[*].version}|{.status.conditions[?(@.type=="ConfigAccepted")].status}`)
		if err != nil {
			return err
		}
		parts := strings.Split(out, "|")
		if len(parts) != 3 || parts[0] == "" || parts[0] == previous || parts[2] != "True" {
			return fmt.Errorf("version|frontends' versions|ConfigAccepted: %q, want a version other than %q, run by every frontend, accepted", out, previous)
		}
		for _, v := range strings.Fields(parts[1]) {
			if v != parts[0] {
				return fmt.Errorf("a frontend runs %s, not %s", v, parts[0])
			}
		}
		if len(strings.Fields(parts[1])) == 0 {
			return fmt.Errorf("no frontend in the status: %q", out)
		}
		version = parts[0]
		return nil
	})
	return version
}

// hostPathPool is AppPool pool of namespace ns, one worker whose content is
// path, a folder of this host that the node mounts (the local cluster runs
// on this host): through claim, bound to PersistentVolume volume (volumes
// are cluster-wide, so its name must be the test's own).
func hostPathPool(pool, claim, volume, ns, path string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec:
  capacity: {storage: 1Mi}
  accessModes: [ReadOnlyMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %[2]s, name: %[4]s}
  hostPath: {path: %[3]s, type: Directory}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[4]s}
spec:
  accessModes: [ReadOnlyMany]
  storageClassName: ""
  volumeName: %[1]s
  resources: {requests: {storage: 1Mi}}
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: %[5]s}
spec:
  content: {persistentVolumeClaim: {claimName: %[4]s}}
  replicas: 1
  cpu: 100m
  memory: 64Mi
---
`, volume, ns, path, claim, pool)
}

// Fifty sites share one pool, each serving its own folder of the pool's
// content with its own 404 page; a site added to the farm is served
// without a change to the pool's workers: the same pods, no restart, the
// same Deployment and nginx.conf.
func TestSitesShareAPoolAndASiteAddedRestartsNoWorker(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests
	start := time.Now()
	ns := cluster.Namespace(t)
	content := hostingContent(t)
	volume := "sites-" + ns // volumes are cluster-wide
	t.Cleanup(func() {
		_, _ = cluster.Kubectl.Run(context.Background(), "delete", "persistentvolume", volume, "--ignore-not-found", "--wait=false")
	})
	cluster.Apply(t, ns, hostPathPool("sites", "sites", volume, ns, content)+hostingFarm(hostingSites))
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/hosting", "apppool/sites")
	front := cluster.ServiceURL(t, ns, "hosting-frontend")
	for i := 1; i <= hostingSites; i++ {
		host := "Host: " + siteName(i) + ".example"
		framework.ExpectBody(t, time.Minute, front+"/", siteName(i)+" home", host)
		if r, err := framework.HTTPGet(front+"/no-such-page", host); err != nil || r.Status != 404 || r.Body != siteName(i)+" has no such page\n" {
			t.Errorf("%s /no-such-page: got %+v %v, want 404 with its own page", siteName(i), r, err)
		}
	}
	t.Logf("%d sites on one pool served %s after the test started", hostingSites, time.Since(start).Round(time.Second))

	before := poolState(t, ns, "sites")
	versionBefore := runsTheConfigurationServed(t, ns, "hosting", "")
	added := time.Now()
	cluster.Apply(t, ns, hostingFarm(hostingSites+1))
	framework.ExpectBody(t, time.Minute, front+"/", siteName(hostingSites+1)+" home", "Host: "+siteName(hostingSites+1)+".example")
	t.Logf("the site added was served %s after the farm changed", time.Since(added).Round(100*time.Millisecond))
	runsTheConfigurationServed(t, ns, "hosting", versionBefore)
	if after := poolState(t, ns, "sites"); after != before {
		t.Errorf("adding a site changed the pool's workers:\nbefore %s\nafter %s", before, after)
	}
	framework.ExpectBody(t, time.Minute, front+"/", siteName(1)+" home", "Host: "+siteName(1)+".example")
	t.Logf("the test took %s", time.Since(start).Round(time.Second))
}
