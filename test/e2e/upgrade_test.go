//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"webfarm.dev/operator/test/e2e/framework"
)

// An upgrade as a user runs it: the previous release (its operator, chart
// and CRDs, from hack/previous-release.env) installed from the registry and
// serving the samples, then `helm upgrade` to this one under 200 requests/s
// through the farm. The chart carries the CRDs, so the new schema is served
// after the upgrade; no request fails; every farm, pool and cache policy
// stays Ready; the new operator takes over the children without rolling a
// pod whose rendered Deployment is the same (its configuration, images and
// pod template), and acts on them.
// Cost: about 3-4 minutes (the previous operator's build and image, two
// rollouts of the operator, the samples' start).
func TestAHelmUpgradeFromThePreviousReleaseLosesNoRequest(t *testing.T) {
	current := cluster.Release
	previous := cluster.Release
	previous.From = cluster.PublishPrevious(t)
	if previous.From.Version == current.From.Version {
		t.Fatalf("the previous release has this release's version %s: update hack/previous-release.env", current.From.Version)
	}
	// Whatever happens, the tests after this one get this release again.
	t.Cleanup(func() { cluster.InstallRelease(t, current) })

	t.Logf("installing the previous release %s", previous.From.Version)
	cluster.InstallRelease(t, previous)
	ns := cluster.Namespace(t)
	cluster.WaitForNodeFree(t)
	cluster.SampleCertificate(t, ns)
	// The samples, with frontends sized for the load (one Envoy carries all
	// 200 requests/s while the other rolls, if the new release rolls them).
	for _, f := range []string{"01-content.yaml", "02-apppools.yaml", "03-cachepolicy.yaml", "04-webfarm.yaml"} {
		raw, err := os.ReadFile(filepath.Join(cluster.Root, "config", "samples", f))
		if err != nil {
			t.Fatal(err)
		}
		manifest := string(raw)
		if f == "04-webfarm.yaml" {
			manifest = strings.Replace(manifest, "cpu: 200m", "cpu: 300m", 1)
		}
		cluster.Apply(t, ns, manifest)
	}
	cluster.WaitReady(t, ns, 4*time.Minute, samples...)
	before := settledChildren(t, ns)

	front := cluster.NodeURL(t, ns, "contoso-frontend")
	framework.ExpectBody(t, time.Minute, front+"/", wwwPage, "Host: www.contoso.example")
	load, loadStarted := startLoad(front+"/", 200, "Host: www.contoso.example"), time.Now()
	defer load.stop()
	ready := watchReadiness(t, ns)
	defer ready.stop()

	t.Logf("helm upgrade to %s, %s after the load started", current.From.Version, time.Since(loadStarted).Round(time.Millisecond))
	cluster.InstallRelease(t, current)
	operatorImage := cluster.Run(t, "get", "deployment", "-n", current.Namespace, current.Name, "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	if !strings.HasSuffix(operatorImage, "@"+current.From.Digests["operator"]) {
		t.Fatalf("the operator runs %s after the upgrade, want the digest %s", operatorImage, current.From.Digests["operator"])
	}
	cluster.WaitLeader(t, 2*time.Minute, func(l framework.Leader) error {
		image := cluster.Run(t, "get", "pod", "-n", current.Namespace, l.Pod, "-o", "jsonpath={.spec.containers[0].image}")
		if image != operatorImage {
			return fmt.Errorf("the leader %s runs %s", l.Pod, image)
		}
		return nil
	})
	// The new leader reconciles every object at once on start: for 20 s
	// after it leads, a Deployment it renders the same keeps its pods at
	// every look.
	var kept []string
	window := time.NewTicker(time.Second)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); <-window.C {
		kept = append(kept, keptPods(before, children(t, ns))...)
	}
	window.Stop()
	after := children(t, ns)
	sent, failures := load.stop()
	notReady := ready.stop()

	t.Run("the new CRDs are served", func(t *testing.T) {
		for _, kind := range []string{"webfarms", "apppools", "cachepolicies"} {
			served := crdSchema(t, []byte(cluster.Run(t, "get", "crd", kind+".webfarm.dev", "-o", "json")))
			raw, err := os.ReadFile(filepath.Join(cluster.Root, "config", "crd", "bases", "webfarm.dev_"+kind+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if want := crdSchema(t, raw); !reflect.DeepEqual(served, want) {
				t.Errorf("the API server serves another schema for %s than config/crd/bases", kind)
			}
		}
	})
	t.Run("no request failed during the upgrade", func(t *testing.T) {
		t.Logf("%d requests sent", sent)
		if sent < 200*10 {
			t.Errorf("only %d requests sent", sent)
		}
		if len(failures) > 0 {
			t.Errorf("%d of %d requests failed (%s the load started), first: %s", len(failures), sent, load.failureWindow(loadStarted), failures[0])
		}
	})
	t.Run("every farm, pool and cache policy stayed Ready", func(t *testing.T) {
		for _, s := range notReady {
			t.Error(s)
		}
	})
	t.Run("a Deployment the new release renders the same kept its pods", func(t *testing.T) {
		for _, name := range slices.Sorted(maps.Keys(before)) {
			if b, a := before[name], after[name]; a.generation != b.generation && a.generation != "" {
				t.Logf("Deployment %s: the new release renders it anew (configuration %s -> %s, images %v -> %v); its pods rolled",
					name, b.hash, a.hash, b.images, a.images)
			}
		}
		for _, e := range slices.Compact(kept) {
			t.Error(e)
		}
	})
	t.Run("the new operator acts on the children it took over", func(t *testing.T) {
		cluster.Run(t, "patch", "apppool", "www", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":3}}`)
		framework.Eventually(t, 2*time.Minute, func() error {
			ready := cluster.Run(t, "get", "deployment", "www-pool", "-n", ns, "-o", "jsonpath={.status.readyReplicas}")
			if ready != "3" {
				return fmt.Errorf("%q ready workers of pool www, want 3", ready)
			}
			return nil
		})
	})
}

// child is a generated Deployment as an upgrade may change it.
type child struct {
	generation string   // changes with every change of its spec
	replicas   string   // the pods it asks for
	hash       string   // the pod template's webfarm.dev/config-hash
	images     []string // its containers' images
	pods       []string // its pods, sorted
	settled    bool     // rolled out: every pod is of the newest template, ready
}

func children(t *testing.T, ns string) map[string]child {
	t.Helper()
	out := map[string]child{}
	// The pods first: a pod of a new template exists only once its
	// Deployment changed, so the Deployments read after them show it.
	pods := cluster.Run(t, "get", "pods", "-n", ns, "-l", managedBy, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].name}{"\n"}{end}`)
	listing := cluster.Run(t, "get", "deployments", "-n", ns, "-l", managedBy, "-o",
		`jsonpath={range .items[*]}{.metadata.name}|{.metadata.generation}|{.status.observedGeneration}|{.spec.replicas}|`+
			`{.status.updatedReplicas}|{.status.readyReplicas}|{.status.replicas}|`+
			`{.spec.template.metadata.annotations.webfarm\.dev/config-hash}|{.spec.template.spec.containers[*].image}{"\n"}{end}`)
	for line := range strings.Lines(strings.TrimSpace(listing)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 9 {
			t.Fatalf("unexpected Deployment line %q", line)
		}
		out[f[0]] = child{generation: f[1], replicas: f[3], hash: f[7], images: strings.Fields(f[8]),
			settled: f[1] == f[2] && f[3] == f[4] && f[3] == f[5] && f[3] == f[6]}
	}
	for line := range strings.Lines(strings.TrimSpace(pods)) {
		pod, replicaSet, _ := strings.Cut(strings.TrimSpace(line), " ")
		// A ReplicaSet is named <deployment>-<template hash>.
		if i := strings.LastIndex(replicaSet, "-"); i > 0 {
			if c, ok := out[replicaSet[:i]]; ok {
				c.pods = append(c.pods, pod)
				out[replicaSet[:i]] = c
			}
		}
	}
	for name, c := range out {
		slices.Sort(c.pods)
		out[name] = c
	}
	return out
}

// settledChildren waits until every generated Deployment has rolled out
// (a farm is Ready before an older ReplicaSet's pods are all gone) and
// returns them.
func settledChildren(t *testing.T, ns string) map[string]child {
	t.Helper()
	var settled map[string]child
	framework.Eventually(t, 2*time.Minute, func() error {
		settled = children(t, ns)
		for name, c := range settled {
			if !c.settled || strconv.Itoa(len(c.pods)) != c.replicas {
				return fmt.Errorf("Deployment %s is still rolling out (%s replicas, pods %v)", name, c.replicas, c.pods)
			}
		}
		return nil
	})
	return settled
}

// keptPods says which Deployments of before lost or changed pods in now
// while the new operator left them as they were, or are gone.
func keptPods(before, now map[string]child) []string {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(before)) {
		b, n := before[name], now[name]
		switch {
		case n.generation == "":
			problems = append(problems, fmt.Sprintf("Deployment %s is gone after the upgrade", name))
		case n.generation == b.generation && !slices.Equal(n.pods, b.pods):
			problems = append(problems, fmt.Sprintf("Deployment %s: rendered the same (generation %s), but its pods %v became %v", name, n.generation, b.pods, n.pods))
		}
	}
	return problems
}

// crdSchema is the OpenAPI schema of each version of a CRD (JSON or YAML).
func crdSchema(t *testing.T, raw []byte) map[string]*apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			schemas[v.Name] = v.Schema.OpenAPIV3Schema
		}
	}
	return schemas
}

// readinessWatch polls the Ready condition of a namespace's farms, pools and
// cache policies every second and remembers each time one was not True.
type readinessWatch struct {
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	notReady []string
}

func watchReadiness(t *testing.T, ns string) *readinessWatch {
	w := &readinessWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for bound := time.After(5 * time.Minute); ; {
			select {
			case <-w.done:
				return
			case <-bound:
				return
			case <-tick.C:
			}
			out, err := cluster.Kubectl.Run(t.Context(), "get", "webfarms,apppools,cachepolicies", "-n", ns, "-o",
				`jsonpath={range .items[*]}{.kind}/{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}{"\n"}{end}`)
			if err != nil {
				continue // the API server is there; a failed read is not the farm's state
			}
			for line := range strings.Lines(strings.TrimSpace(out)) {
				if f := strings.Fields(line); len(f) < 2 || f[1] != "True" {
					w.mu.Lock()
					w.notReady = append(w.notReady, fmt.Sprintf("%s at %s", strings.TrimSpace(line), time.Now().Format(time.TimeOnly)))
					w.mu.Unlock()
				}
			}
		}
	}()
	return w
}

func (w *readinessWatch) stop() []string {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.notReady)
}
