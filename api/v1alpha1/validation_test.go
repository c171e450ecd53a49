package v1alpha1_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// These tests apply manifests, as a person would with kubectl, to a real
// kube-apiserver and etcd that have the generated CRDs installed: the OpenAPI
// markers, CEL rules and defaults are checked where they take effect.

// k8s is a client of the test control plane that TestMain starts.
var k8s client.Client

func TestMain(m *testing.M) { os.Exit(testutil.RunWithControlPlane(m, &k8s)) }

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	return testutil.NewNamespace(t, k8s, "validation-")
}

// bases are a valid object of each kind, in YAML, that a case's patch changes.
var bases = map[string]string{
	"WebFarm": `
		apiVersion: webfarm.dev/v1alpha1
		kind: WebFarm
		metadata: {name: farm}
		spec:
		  sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]
	`,
	"AppPool": `
		apiVersion: webfarm.dev/v1alpha1
		kind: AppPool
		metadata: {name: pool}
		spec:
		  app: {image: "registry.example.com/shop:2.1", port: 3000}
	`,
	"CachePolicy": `
		apiVersion: webfarm.dev/v1alpha1
		kind: CachePolicy
		metadata: {name: cache}
	`,
	"SiteContent": `
		apiVersion: webfarm.dev/v1alpha1
		kind: SiteContent
		metadata: {name: shop}
		spec: {directory: shop}
	`,
}

// repeated is n items, made by format from their index, separated by commas.
func repeated(n int, format string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(items, ", ")
}

// tooLongName is one character longer than any of the kinds' names may be.
var tooLongName = strings.Repeat("a", 51)

// A manifestCase is a manifest a person might apply and what the API server
// answers. The manifest is its kind's base with patch merged over it as
// `kubectl patch --type merge` would (RFC 7386): maps merge, a list replaces
// the base's list whole, and null removes a field.
//
//nolint:kubeapilinter // a test table's row, not an API type
type manifestCase struct {
	name  string
	patch string
	// want are substrings of the error message kubectl shows; all must
	// appear. None means the API server accepts the manifest.
	want []string
	// reason is the status reason of a refusal: Invalid (HTTP 422) unless set.
	reason metav1.StatusReason
}

func accepted(name, patch string) manifestCase { return manifestCase{name: name, patch: patch} }

func refused(name, patch string, want ...string) manifestCase {
	return refusedAs(metav1.StatusReasonInvalid, name, patch, want...)
}

func refusedAs(reason metav1.StatusReason, name, patch string, want ...string) manifestCase {
	return manifestCase{name: name, patch: patch, want: want, reason: reason}
}

// checkManifests applies each case's manifest, as a person would with
// kubectl, and checks the API server's answer.
func checkManifests(t *testing.T, kind string, cases []manifestCase) {
	ns := newNamespace(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := patched(t, kind, tc.patch)
			err := testutil.CreateStrict(k8s, ns, obj)
			if err == nil {
				remove(t, obj)
			}
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Fatalf("the API server refused the manifest: %v", err)
			case len(tc.want) > 0 && err == nil:
				t.Fatalf("the API server accepted the manifest; want an error containing %q", tc.want)
			case len(tc.want) > 0:
				if got := apierrors.ReasonForError(err); got != tc.reason {
					t.Errorf("want a %s error, got %s: %v", tc.reason, got, err)
				}
				checkRefusal(t, err, tc.want...)
			}
		})
	}
}

// patched is kind's base with patch (YAML written inside a Go raw string)
// merged over it.
func patched(t *testing.T, kind, patch string) *unstructured.Unstructured {
	t.Helper()
	merged := mergePatch(decodeYAML(t, bases[kind]), decodeYAML(t, patch))
	return &unstructured.Unstructured{Object: merged.(map[string]any)}
}

// decodeYAML reads YAML written inside a Go raw string: the indentation
// common to its lines (Go's tabs) is removed first, so the YAML's own spaces stay.
func decodeYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	var decoded map[string]any
	if err := yaml.Unmarshal([]byte(testutil.Dedent(doc)), &decoded); err != nil {
		t.Fatalf("the test's YAML is not valid: %v\n%s", err, doc)
	}
	return decoded
}

// mergePatch is the JSON merge patch of RFC 7386, on decoded JSON.
func mergePatch(doc, patch any) any {
	change, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	merged, _ := doc.(map[string]any)
	merged = maps.Clone(merged)
	if merged == nil {
		merged = map[string]any{}
	}
	for key, value := range change {
		if value == nil {
			delete(merged, key)
			continue
		}
		merged[key] = mergePatch(merged[key], value)
	}
	return merged
}

// decode reads a whole manifest written inside a Go raw string.
func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: decodeYAML(t, manifest)}
	if obj.GetKind() == "" || obj.GetName() == "" {
		t.Fatalf("the test manifest needs a kind and a metadata.name:\n%s", manifest)
	}
	return obj
}

// apply creates the manifest in namespace ns (testutil.CreateStrict) and
// returns the object as stored, or the API server's error.
func apply(t *testing.T, ns, manifest string) (*unstructured.Unstructured, error) {
	t.Helper()
	obj := decode(t, manifest)
	return obj, testutil.CreateStrict(k8s, ns, obj)
}

// remove deletes an object a case created, so the next case can reuse its name.
func remove(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if err := k8s.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// celFailures are parts of messages that mean a CEL rule failed to run rather
// than judged the object: a person could not act on them.
var celFailures = []string{"type conversion error", "evaluating rule", "evaluation error", "no such key", "no such overload", "cost budget", "Internal error"}

// checkRefusal checks that the API server's error holds every wanted part
// and no sign of a rule that failed to run.
func checkRefusal(t *testing.T, err error, want ...string) {
	t.Helper()
	msg := err.Error()
	t.Logf("the API server says: %s", msg)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("the error does not contain %q:\n%s", w, msg)
		}
	}
	for _, bad := range celFailures {
		if strings.Contains(msg, bad) {
			t.Errorf("the error contains %q, a rule that failed to run:\n%s", bad, msg)
		}
	}
}

// TestAPIServerFillsInIISDefaults creates minimal objects and reads them back:
// the API server must fill in the IIS defaults, and they must equal the
// constants the model uses for objects built in code.
func TestAPIServerFillsInIISDefaults(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	create := func(kind, patch string, into client.Object) {
		t.Helper()
		obj := patched(t, kind, patch)
		if err := testutil.CreateStrict(k8s, ns, obj); err != nil {
			t.Fatalf("creating a minimal %s: %v", kind, err)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), into); err != nil {
			t.Fatalf("reading %s %s back: %v", kind, obj.GetName(), err)
		}
	}
	var pool, scaled v1.AppPool
	create("AppPool", `spec: {app: null, content: {configMap: {name: site}}}`, &pool)
	create("AppPool", `
		metadata: {name: scaled}
		spec:
		  app: null
		  content: {image: {reference: "registry.example.com/site:1.4"}}
		  cpuLimit: {percent: 80}
		  autoscaling: {}
	`, &scaled)
	var cache v1.CachePolicy
	create("CachePolicy", `{}`, &cache)
	var farm, cookieFarm v1.WebFarm
	create("WebFarm", `spec: {sites: [{name: www, hosts: [www.example.com], routes: [{appPool: pool}]}]}`, &farm)
	create("WebFarm", `
		metadata: {name: cookie-farm}
		spec:
		  sites: [{name: www, hosts: [www.example.com], routes: [{appPool: pool}]}]
		  sessionAffinity: {type: Cookie, cookie: {}}
	`, &cookieFarm)
	// accessLog has no default of its own (objects stored before it existed
	// read the same); the model logs every request without it.
	var loggedFarm v1.WebFarm
	create("WebFarm", `
		metadata: {name: logged-farm}
		spec:
		  sites: [{name: www, hosts: [www.example.com], routes: [{appPool: pool}]}]
		  frontend: {accessLog: {}}
	`, &loggedFarm)

	var scaledFarm v1.WebFarm
	create("WebFarm", `
		metadata: {name: scaled-farm}
		spec:
		  sites: [{name: www, hosts: [www.example.com], routes: [{appPool: pool}]}]
		  frontend: {autoscaling: {}}
	`, &scaledFarm)

	deref32 := func(p *int32) any {
		if p == nil {
			return "<unset>"
		}
		return *p
	}
	derefBool := func(p *bool) any {
		if p == nil {
			return "<unset>"
		}
		return *p
	}
	qty := func(q *resource.Quantity) string {
		if q == nil {
			return "<unset>"
		}
		return q.String()
	}
	canon := func(s string) string { q := resource.MustParse(s); return q.String() }

	var autoscaling v1.Autoscaling
	if scaled.Spec.Autoscaling == nil {
		t.Errorf("spec.autoscaling of the pool with autoscaling: {} was dropped")
	} else {
		autoscaling = *scaled.Spec.Autoscaling
	}
	var frontendScaling v1.FrontendAutoscaling
	if scaledFarm.Spec.Frontend.Autoscaling == nil {
		t.Errorf("spec.frontend.autoscaling of the farm with autoscaling: {} was dropped")
	} else {
		frontendScaling = *scaledFarm.Spec.Frontend.Autoscaling
	}
	cpuLimit := scaled.Spec.CPULimit
	if cpuLimit.Percent == 0 {
		t.Errorf("spec.cpuLimit was dropped")
	}
	var cookie v1.AffinityCookieSpec
	if cookieFarm.Spec.SessionAffinity.Cookie == nil {
		t.Errorf("spec.sessionAffinity.cookie of the cookie farm was dropped")
	} else {
		cookie = *cookieFarm.Spec.SessionAffinity.Cookie
	}
	var imagePath string
	if c := scaled.Spec.Content; c != nil && c.Image.Reference != "" {
		imagePath = c.Image.Path
	} else {
		t.Errorf("spec.content.image of the scaled pool was dropped")
	}
	var route v1.Route
	if len(farm.Spec.Sites) == 1 && len(farm.Spec.Sites[0].Routes) == 1 {
		route = farm.Spec.Sites[0].Routes[0]
	} else {
		t.Errorf("the farm's sites changed: %+v", farm.Spec.Sites)
	}

	cases := []struct {
		field     string
		got, want any
	}{
		// AppPool.
		{"AppPool spec.replicas", deref32(pool.Spec.Replicas), int32(v1.DefaultPoolReplicas)},
		{"AppPool spec.cpu", qty(pool.Spec.CPU), canon(v1.DefaultPoolCPU)},
		{"AppPool spec.memory", qty(pool.Spec.Memory), canon(v1.DefaultPoolMemory)},
		{"AppPool spec.maxConcurrentRequests", pool.Spec.MaxConcurrentRequests, int32(v1.DefaultMaxConcurrent)},
		{"AppPool spec.queue.length", pool.Spec.Queue.Length, int32(v1.DefaultQueueLength)},
		{"AppPool spec.queue.length is IIS's 1000", pool.Spec.Queue.Length, int32(1000)},
		{"AppPool spec.queue.timeout stays unset", string(pool.Spec.Queue.Timeout), ""},
		{"AppPool spec.healthCheck.path", string(pool.Spec.HealthCheck.Path), v1.DefaultHealthPath},
		{"AppPool spec.healthCheck.interval", string(pool.Spec.HealthCheck.Interval), v1.DefaultHealthInterval},
		{"AppPool spec.healthCheck.interval is IIS's 30s", string(pool.Spec.HealthCheck.Interval), "30s"},
		{"AppPool spec.healthCheck.timeout", string(pool.Spec.HealthCheck.Timeout), v1.DefaultHealthTimeout},
		{"AppPool spec.healthCheck.failureThreshold", pool.Spec.HealthCheck.FailureThreshold, int32(v1.DefaultHealthFailures)},
		{"AppPool spec.healthCheck.pingingEnabled is IIS's true", derefBool(pool.Spec.HealthCheck.PingingEnabled), true},
		{"AppPool spec.healthCheck.pingInterval", string(pool.Spec.HealthCheck.PingInterval), v1.DefaultPingInterval},
		{"AppPool spec.healthCheck.pingInterval is IIS's 30s", string(pool.Spec.HealthCheck.PingInterval), "30s"},
		{"AppPool spec.healthCheck.pingResponseTime", string(pool.Spec.HealthCheck.PingResponseTime), v1.DefaultPingResponseTime},
		{"AppPool spec.healthCheck.pingResponseTime is IIS's 90s", string(pool.Spec.HealthCheck.PingResponseTime), "90s"},
		{"AppPool spec.healthCheck.startupTimeLimit", string(pool.Spec.HealthCheck.StartupTimeLimit), v1.DefaultStartupTimeLimit},
		{"AppPool spec.healthCheck.startupTimeLimit is IIS's 90s", string(pool.Spec.HealthCheck.StartupTimeLimit), "90s"},
		{"AppPool spec.healthCheck.shutdownTimeLimit", string(pool.Spec.HealthCheck.ShutdownTimeLimit), v1.DefaultShutdownTimeLimit},
		{"AppPool spec.healthCheck.shutdownTimeLimit is IIS's 90s", string(pool.Spec.HealthCheck.ShutdownTimeLimit), "90s"},
		{"AppPool spec.rapidFailProtection.enabled", derefBool(pool.Spec.RapidFailProtection.Enabled), true},
		{"AppPool spec.rapidFailProtection.maxFailures", pool.Spec.RapidFailProtection.MaxFailures, int32(v1.DefaultRapidFailMax)},
		{"AppPool spec.rapidFailProtection.maxFailures is IIS's 5", pool.Spec.RapidFailProtection.MaxFailures, int32(5)},
		{"AppPool spec.rapidFailProtection.interval", string(pool.Spec.RapidFailProtection.Interval), v1.DefaultRapidFailInterval},
		{"AppPool spec.rapidFailProtection.interval is IIS's 5m", string(pool.Spec.RapidFailProtection.Interval), "5m"},
		{"AppPool spec.cpuLimit stays unset", pool.Spec.CPULimit == (v1.CPULimit{}), true},
		{"AppPool spec.idle.timeout", string(pool.Spec.Idle.Timeout), v1.DefaultIdleTimeout},
		{"AppPool spec.idle.timeout is IIS's 20m", string(pool.Spec.Idle.Timeout), "20m"},
		{"AppPool spec.idle.onDemandStart", derefBool(pool.Spec.Idle.OnDemandStart), true},
		{"AppPool spec.recycling.interval", string(pool.Spec.Recycling.Interval), v1.DefaultRecycleInterval},
		{"AppPool spec.recycling.interval is IIS's 29h", string(pool.Spec.Recycling.Interval), "29h"},
		{"AppPool spec.autoscaling stays unset", pool.Spec.Autoscaling == nil, true},
		{"AppPool spec.content.image.path", imagePath, v1.DefaultImageContentPath},
		{"AppPool spec.cpuLimit.interval", string(cpuLimit.Interval), "5m"},
		{"AppPool spec.cpuLimit.action", cpuLimit.Action, v1.CPULimitReport},
		{"AppPool spec.autoscaling.minReplicas", autoscaling.MinReplicas, int32(v1.DefaultMinReplicas)},
		{"AppPool spec.autoscaling.maxReplicas", autoscaling.MaxReplicas, int32(v1.DefaultMaxReplicas)},
		{"AppPool spec.autoscaling.targetCPUUtilizationPercent", autoscaling.TargetCPUUtilizationPercent, int32(v1.DefaultTargetCPUPercent)},
		{"AppPool spec.autoscaling.targetCPUUtilizationPercent is 30", autoscaling.TargetCPUUtilizationPercent, int32(30)},
		{"AppPool spec.autoscaling.stabilizationWindow", string(autoscaling.StabilizationWindow), v1.DefaultStabilization},
		{"AppPool spec.autoscaling.fallbackReplicas stays unset", deref32(autoscaling.FallbackReplicas), "<unset>"},
		{"WebFarm spec.frontend.autoscaling.minReplicas", frontendScaling.MinReplicas, int32(v1.DefaultMinReplicas)},
		{"WebFarm spec.frontend.autoscaling.maxReplicas", frontendScaling.MaxReplicas, int32(v1.DefaultFrontendMaxScale)},
		{"WebFarm spec.frontend.autoscaling.targetCPUUtilizationPercent", frontendScaling.TargetCPUUtilizationPercent, int32(v1.DefaultTargetCPUPercent)},
		{"WebFarm spec.frontend.autoscaling.stabilizationWindow", string(frontendScaling.StabilizationWindow), v1.DefaultStabilization},
		// CachePolicy.
		{"CachePolicy spec.frequentHitThreshold", cache.Spec.FrequentHitThreshold, int32(v1.DefaultHitThreshold)},
		{"CachePolicy spec.frequentHitThreshold is IIS's 2", cache.Spec.FrequentHitThreshold, int32(2)},
		{"CachePolicy spec.frequentHitPeriod", string(cache.Spec.FrequentHitPeriod), v1.DefaultHitPeriod},
		{"CachePolicy spec.frequentHitPeriod is IIS's 10s", string(cache.Spec.FrequentHitPeriod), "10s"},
		{"CachePolicy spec.objectTTL", string(cache.Spec.ObjectTTL), v1.DefaultObjectTTL},
		{"CachePolicy spec.objectTTL is IIS's 30s", string(cache.Spec.ObjectTTL), "30s"},
		{"CachePolicy spec.maxObjectSize", qty(cache.Spec.MaxObjectSize), canon(v1.DefaultMaxObjectSize)},
		{"CachePolicy spec.maxObjectSize is IIS's 256Ki", qty(cache.Spec.MaxObjectSize), "256Ki"},
		{"CachePolicy spec.memorySize", qty(cache.Spec.MemorySize), canon(v1.DefaultCacheMemory)},
		{"CachePolicy spec.memorySize is 64Mi", qty(cache.Spec.MemorySize), "64Mi"},
		{"CachePolicy spec.cacheQueryStrings", derefBool(cache.Spec.CacheQueryStrings), false},
		{"CachePolicy spec.clientCache.mode", cache.Spec.ClientCache.Mode, v1.ClientCacheNoControl},
		{"CachePolicy spec.replicas", cache.Spec.Replicas, int32(v1.DefaultCacheReplicas)},
		{"CachePolicy spec.cpu", qty(cache.Spec.CPU), canon(v1.DefaultCacheCPU)},
		// WebFarm.
		{"WebFarm spec.frontend.replicas", farm.Spec.Frontend.Replicas, int32(v1.DefaultFrontendReplicas)},
		{"WebFarm spec.frontend.replicas is 2", farm.Spec.Frontend.Replicas, int32(2)},
		{"WebFarm spec.frontend.service.type", farm.Spec.Frontend.Service.Type, v1.ServiceType("ClusterIP")},
		{"WebFarm spec.frontend.service.port", farm.Spec.Frontend.Service.Port, int32(v1.DefaultFrontendPort)},
		{"WebFarm spec.frontend.connectionTimeout", string(farm.Spec.Frontend.ConnectionTimeout), v1.DefaultConnectionTimeout},
		{"WebFarm spec.frontend.connectionTimeout is IIS's 120s", string(farm.Spec.Frontend.ConnectionTimeout), "120s"},
		{"WebFarm spec.frontend.requestTimeout", string(farm.Spec.Frontend.RequestTimeout), v1.DefaultRequestTimeout},
		{"WebFarm spec.frontend.webSocketIdleTimeout", string(farm.Spec.Frontend.WebSocketIdleTimeout), v1.DefaultWebSocketIdle},
		{"WebFarm spec.frontend.clientLimits.requestHeadersTimeout", string(farm.Spec.Frontend.ClientLimits.RequestHeadersTimeout), v1.DefaultHeadersTimeout},
		{"WebFarm spec.frontend.clientLimits.requestBodyTimeout", string(farm.Spec.Frontend.ClientLimits.RequestBodyTimeout), v1.DefaultBodyTimeout},
		{"WebFarm spec.frontend.clientLimits.requestBodyTimeout is IIS's 120s", string(farm.Spec.Frontend.ClientLimits.RequestBodyTimeout), "120s"},
		{"WebFarm spec.frontend.clientLimits.maxRequestHeadersKiB", farm.Spec.Frontend.ClientLimits.MaxRequestHeadersKiB, int32(v1.DefaultMaxHeadersKiB)},
		{"WebFarm spec.frontend.clientLimits.maxRequestHeadersKiB is IIS's 16", farm.Spec.Frontend.ClientLimits.MaxRequestHeadersKiB, int32(16)},
		{"WebFarm spec.frontend.clientLimits.perAddress stays unset", farm.Spec.Frontend.ClientLimits.PerAddress == v1.RequestRate{}, true},
		{"WebFarm spec.frontend.keepAlive", derefBool(farm.Spec.Frontend.KeepAlive), true},
		{"WebFarm spec.frontend.compression", derefBool(farm.Spec.Frontend.Compression), false},
		{"WebFarm spec.frontend.debugHeaders", derefBool(farm.Spec.Frontend.DebugHeaders), false},
		{"WebFarm spec.frontend.accessLog is left unset", farm.Spec.Frontend.AccessLog, v1.AccessLog{}},
		{"WebFarm spec.frontend.accessLog.enabled", derefBool(loggedFarm.Spec.Frontend.AccessLog.Enabled), true},
		{"WebFarm spec.frontend.accessLog.samplePercent", loggedFarm.Spec.Frontend.AccessLog.SamplePercent, int32(v1.DefaultAccessLogPercent)},
		{"WebFarm spec.frontend.cpu", qty(farm.Spec.Frontend.CPU), canon(v1.DefaultFrontendCPU)},
		{"WebFarm spec.frontend.memory", qty(farm.Spec.Frontend.Memory), canon(v1.DefaultFrontendMemory)},
		{"WebFarm spec.unavailableResponse", farm.Spec.UnavailableResponse, v1.UnavailableL7},
		{"WebFarm spec.sessionAffinity.type", farm.Spec.SessionAffinity.Type, v1.AffinityNone},
		{"WebFarm spec.sessionAffinity.cookie stays unset", farm.Spec.SessionAffinity.Cookie == nil, true},
		{"WebFarm spec.sites[0].routes[0].pathPrefix", string(route.PathPrefix), v1.DefaultPathPrefix},
		{"WebFarm spec.sessionAffinity.cookie.name", cookie.Name, v1.DefaultAffinityCookieName},
		{"WebFarm spec.sessionAffinity.cookie.ttl", string(cookie.TTL), "0s"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s = %v (%T), want %v (%T)", tc.field, tc.got, tc.got, tc.want, tc.want)
			}
		})
	}
}

// An app volume the user says nothing more of is read-only, and its Secret
// or ConfigMap is not optional: the worker waits for it.
func TestAnAppVolumeIsReadOnlyAndNotOptionalByDefault(t *testing.T) {
	ns := newNamespace(t)
	obj := patched(t, "AppPool", `
		spec:
		  app:
		    volumes:
		    - {name: db, mountPath: /etc/db, secret: {name: db}}
		    - {name: settings, mountPath: /etc/settings, configMap: {name: settings}}
		    - {name: files, mountPath: /srv/files, persistentVolumeClaim: {claimName: files}}
	`)
	if err := testutil.CreateStrict(k8s, ns, obj); err != nil {
		t.Fatal(err)
	}
	var pool v1.AppPool
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), &pool); err != nil {
		t.Fatal(err)
	}
	for _, v := range pool.Spec.App.Volumes {
		if v.ReadOnly == nil || !*v.ReadOnly {
			t.Errorf("volume %s: readOnly %v, want true", v.Name, v.ReadOnly)
		}
	}
	db, settings := pool.Spec.App.Volumes[0].Secret, pool.Spec.App.Volumes[1].ConfigMap
	if db.Optional == nil || *db.Optional || settings.Optional == nil || *settings.Optional {
		t.Errorf("optional: Secret %v, ConfigMap %v; want false for both", db.Optional, settings.Optional)
	}
}
