package k8s_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"webfarm.dev/operator/internal/drain"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

var platform = model.Platform{
	Images:  model.Images{Envoy: "localhost/webfarm-envoy:1.40.0", Nginx: "localhost/webfarm-nginx:1.22.1", CacheAgent: "localhost/webfarm-operator:dev", PullPolicy: "IfNotPresent"},
	XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000,
}

func int32p(v int32) *int32 { return &v }

func farm() model.Farm {
	return model.Farm{
		Name: "shop", Namespace: "web", UID: "farm-uid", Platform: platform,
		Frontend: model.Frontend{Replicas: 2, ServiceType: "NodePort", Port: 80, NodePort: 30080, CPUMilli: 500, MemoryBytes: 256 << 20,
			Service: model.ServiceExposure{ExternalTrafficPolicy: "Local"}},
	}
}

// tlsFarm has two sites with HTTPS and one without.
func tlsFarm() model.Farm {
	f := farm()
	f.Frontend.HTTPSPort, f.Frontend.DefaultTLSSite = 443, "blog"
	f.Sites = []model.Site{
		{Name: "blog", Hosts: []string{"blog.example"}, TLS: &model.SiteTLS{SecretName: "blog-tls"}},
		{Name: "plain", Hosts: []string{"plain.example"}},
		{Name: "shop", Hosts: []string{"shop.example"}, TLS: &model.SiteTLS{SecretName: "shop.example-tls"}},
	}
	return f
}

func pool() model.Pool {
	return model.Pool{
		Name: "catalog", Namespace: "web", UID: "pool-uid", Platform: platform, Replicas: int32p(3),
		CPUMilli: 500, MemoryBytes: 128 << 20, MaxConcurrentRequests: 100, QueueLength: 1000,
		Content: model.Content{Source: model.ContentImage, Name: "registry.example.com/catalog-content:7", ImagePath: "/content"},
		App: &model.App{Image: "registry.example.com/catalog:2.1", Port: 3000, Args: []string{"--workers=4"}, Env: []model.EnvVar{
			{Name: "DB_PASSWORD", From: &model.KeyRef{Secret: true, Name: "catalog-db", Key: "password"}},
			{Name: "MODE", Value: "production"},
			{Name: "REGION", From: &model.KeyRef{Name: "catalog-settings", Key: "region", Optional: true}},
		}, Volumes: []model.Volume{
			{Name: "credentials", MountPath: "/etc/catalog/credentials", Kind: model.VolumeSecret, Object: "catalog-db", ReadOnly: true},
			{Name: "settings", MountPath: "/etc/catalog/settings", Kind: model.VolumeConfigMap, Object: "catalog-settings", Optional: true, ReadOnly: true},
			{Name: "uploads", MountPath: "/var/catalog/uploads", Kind: model.VolumeClaim, Object: "catalog-uploads"},
		}},
		Health: model.HealthCheck{Path: "/health", Interval: 30 * time.Second, Timeout: 5 * time.Second, FailureThreshold: 3,
			Pinging: true, PingInterval: 30 * time.Second, PingResponseTime: 90 * time.Second, StartupTimeLimit: 90 * time.Second, ShutdownTimeLimit: 90 * time.Second},
		Rollout: model.Rollout{MaxSurge: 1},
	}
}

func cache() model.Cache {
	return model.Cache{
		Name: "static", Namespace: "web", UID: "cache-uid", Platform: platform,
		FrequentHitThreshold: 2, ObjectTTL: 30 * time.Second, MemorySizeBytes: 64 << 20, MaxObjectSizeBytes: 256 << 10,
		Replicas: 2, CPUMilli: 250,
	}
}

func toYAML(t *testing.T, objs ...any) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes()
}

func TestObjects(t *testing.T) {
	fe := k8s.Frontend(farm(), []byte("{}\n"))
	tls := k8s.Frontend(tlsFarm(), []byte("{}\n"))
	p := k8s.Pool(pool(), "# nginx.conf\n")
	grpcPool := pool()
	grpcPool.App = &model.App{Image: "registry.example.com/greeter:1", Port: 9000, Protocol: model.AppGRPC}
	g := k8s.Pool(grpcPool, "# nginx.conf\n")
	http2Pool := pool()
	http2Pool.App = &model.App{Image: "registry.example.com/h2:1", Port: 9000, Protocol: model.AppHTTP2}
	h2 := k8s.Pool(http2Pool, "# nginx.conf\n")
	staticPool := pool()
	staticPool.App = nil
	static := k8s.Pool(staticPool, "# nginx.conf\n")
	c := k8s.Cache(cache(), "# nginx.conf\n", "{}\n")
	lb := k8s.Frontend(lbFarm(), []byte("{}\n"))
	tests := []struct {
		name   string
		golden string
		objs   []any
	}{
		{"a farm gets an Envoy Deployment, its bootstrap, a Service and a ServiceAccount", "frontend.yaml", []any{fe.ServiceAccount, fe.ConfigMap, fe.Service, fe.Deployment}},
		{"a farm with HTTPS sites mounts each site's Secret, optional and read-only, and opens an https port", "frontend-tls.yaml", []any{tls.ConfigMap, tls.Service, tls.Deployment}},
		{"a pool gets nginx workers with its app (environment from values, a Secret and a ConfigMap; a Secret, a ConfigMap and a writable claim mounted), content, Service, disruption budget and identity", "pool.yaml", []any{p.ServiceAccount, p.ConfigMap, p.Service, p.Deployment, p.PodDisruptionBudget}},
		{"a pool whose app speaks gRPC takes HTTP/2 on its Service's port and is ready when the app answers gRPC health checks", "pool-grpc.yaml", []any{g.Deployment}},
		{"a pool whose app speaks HTTP/2 is pinged through nginx's HTTP/1.1 port", "pool-http2.yaml", []any{h2.Deployment}},
		{"a pool without an app is pinged by a request for its content from nginx", "pool-static.yaml", []any{static.Deployment}},
		{"a cache policy gets nginx cache pods with in-memory storage", "cache.yaml", []any{c.ConfigMap, c.Service, c.Deployment}},
		{"a farm behind a cloud load balancer gets its class, annotations and source ranges, and frontends on edge nodes", "frontend-lb.yaml", []any{lb.Service, lb.Deployment}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testutil.Golden(t, tt.golden, toYAML(t, tt.objs...))
		})
	}
}

func TestPodsMeetTheRestrictedPodSecurityStandard(t *testing.T) {
	withConfigMap := pool()
	withConfigMap.Content = model.Content{Source: model.ContentConfigMap, Name: "catalog-files"}
	withConfigMap.App = nil
	withClaim := pool()
	withClaim.Content = model.Content{Source: model.ContentClaim, Name: "catalog-files"}

	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		deployment *appsv1ac.DeploymentApplyConfiguration
	}{
		{"the Envoy frontend", k8s.Frontend(farm(), nil).Deployment},
		{"the Envoy frontend with HTTPS sites", k8s.Frontend(tlsFarm(), nil).Deployment},
		{"a pool with image content and an app that mounts a Secret, a ConfigMap and a writable claim", k8s.Pool(pool(), "").Deployment},
		{"a pool serving a ConfigMap", k8s.Pool(withConfigMap, "").Deployment},
		{"a pool serving a volume claim", k8s.Pool(withClaim, "").Deployment},
		{"a cache tier", k8s.Cache(cache(), "", "").Deployment},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is restricted", func(t *testing.T) {
			var d appsv1.Deployment
			raw, err := json.Marshal(tt.deployment)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			results := evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()},
				&d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)
			for _, r := range results {
				if !r.Allowed {
					t.Errorf("violates restricted: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
				}
			}
		})
	}
}

func TestAPoolsRolloutFollowsItsSpec(t *testing.T) {
	tests := []struct {
		name               string
		rollout            model.Rollout
		surge, unavailable int32
	}{
		{"by default a new worker starts before an old one stops", model.Rollout{MaxSurge: 1}, 1, 0},
		{"on full nodes the workers are updated in place, one at a time", model.Rollout{MaxUnavailable: 1}, 0, 1},
		{"a large pool may replace several workers at once", model.Rollout{MaxSurge: 3, MaxUnavailable: 2}, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pool()
			p.Rollout = tt.rollout
			ru := k8s.Pool(p, "").Deployment.Spec.Strategy.RollingUpdate
			if ru.MaxSurge.IntVal != tt.surge || ru.MaxUnavailable.IntVal != tt.unavailable {
				t.Errorf("maxSurge %v, maxUnavailable %v; want %d and %d", ru.MaxSurge, ru.MaxUnavailable, tt.surge, tt.unavailable)
			}
		})
	}
}

func TestAPoolsWorkersRunAsItsOwnServiceAccountWithATokenOnlyWhenAsked(t *testing.T) {
	for _, mount := range []bool{false, true} {
		p := pool()
		p.MountAPIToken = mount
		objs := k8s.Pool(p, "")
		spec := objs.Deployment.Spec.Template.Spec
		if *spec.ServiceAccountName != *objs.ServiceAccount.Name || *objs.ServiceAccount.Name != "catalog-pool" {
			t.Errorf("workers run as %q, the pool's ServiceAccount is %q", *spec.ServiceAccountName, *objs.ServiceAccount.Name)
		}
		if *spec.AutomountServiceAccountToken != mount || *objs.ServiceAccount.AutomountServiceAccountToken {
			t.Errorf("mountAPIToken %v: the pod mounts the token %v, the ServiceAccount %v", mount, *spec.AutomountServiceAccountToken, *objs.ServiceAccount.AutomountServiceAccountToken)
		}
	}
}

func TestAnAppMountsTheVolumesItNamesByNameReadOnlyUnlessAClaimSaysOtherwise(t *testing.T) {
	p := pool()
	p.App.Volumes[2].ReadOnly = true
	readOnlyClaim := k8s.Pool(p, "").Deployment.Spec.Template.Spec
	writable := k8s.Pool(pool(), "").Deployment.Spec.Template.Spec

	tests := []struct {
		name     string
		spec     *corev1ac.PodSpecApplyConfiguration
		volume   string
		path     string
		readOnly bool
		source   func(v *corev1ac.VolumeApplyConfiguration) string
	}{
		{"a Secret is mounted by its name, read-only", writable, "app-credentials", "/etc/catalog/credentials", true,
			func(v *corev1ac.VolumeApplyConfiguration) string {
				return fmt.Sprintf("secret %s optional %v", deref(v.Secret.SecretName), deref(v.Secret.Optional))
			}},
		{"an optional ConfigMap is mounted by its name, read-only", writable, "app-settings", "/etc/catalog/settings", true,
			func(v *corev1ac.VolumeApplyConfiguration) string {
				return fmt.Sprintf("configMap %s optional %v", deref(v.ConfigMap.Name), deref(v.ConfigMap.Optional))
			}},
		{"a claim marked writable is mounted writable", writable, "app-uploads", "/var/catalog/uploads", false,
			func(v *corev1ac.VolumeApplyConfiguration) string {
				return fmt.Sprintf("claim %s readOnly %v", deref(v.PersistentVolumeClaim.ClaimName), deref(v.PersistentVolumeClaim.ReadOnly))
			}},
		{"a read-only claim is mounted read-only", readOnlyClaim, "app-uploads", "/var/catalog/uploads", true,
			func(v *corev1ac.VolumeApplyConfiguration) string {
				return fmt.Sprintf("claim %s readOnly %v", deref(v.PersistentVolumeClaim.ClaimName), deref(v.PersistentVolumeClaim.ReadOnly))
			}},
	}
	want := map[string]string{
		"app-credentials": "secret catalog-db optional false",
		"app-settings":    "configMap catalog-settings optional true",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := slices.IndexFunc(tt.spec.Volumes, func(v corev1ac.VolumeApplyConfiguration) bool { return *v.Name == tt.volume })
			if i < 0 {
				t.Fatalf("the pod has no volume %s", tt.volume)
			}
			w, ok := want[tt.volume]
			if !ok {
				w = fmt.Sprintf("claim catalog-uploads readOnly %v", tt.readOnly)
			}
			if got := tt.source(&tt.spec.Volumes[i]); got != w {
				t.Errorf("volume %s is %q, want %q", tt.volume, got, w)
			}
			for _, c := range tt.spec.Containers {
				for _, m := range c.VolumeMounts {
					if *m.Name != tt.volume {
						continue
					}
					if *c.Name != "app" || *m.MountPath != tt.path || deref(m.ReadOnly) != tt.readOnly {
						t.Errorf("container %s mounts %s at %s read-only %v; want the app at %s read-only %v",
							*c.Name, tt.volume, *m.MountPath, deref(m.ReadOnly), tt.path, tt.readOnly)
					}
					return
				}
			}
			t.Errorf("no container mounts %s", tt.volume)
		})
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestAConfigChangeChangesThePodTemplateHash(t *testing.T) {
	a := k8s.Pool(pool(), "worker_processes 1;").Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey]
	b := k8s.Pool(pool(), "worker_processes 2;").Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey]
	again := k8s.Pool(pool(), "worker_processes 1;").Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey]
	if a == b {
		t.Error("two different configs gave the same pod template hash: a config change would not roll the pods")
	}
	if a != again {
		t.Error("the same config gave two hashes: pods would roll for nothing")
	}
}

func TestAPoolWithAQueueTimeoutShipsTheQueueScriptBesideItsConfig(t *testing.T) {
	p := pool()
	p.QueueTimeout = 2 * time.Second
	objs := k8s.Pool(p, "worker_processes 1;")
	data := objs.ConfigMap.Data
	if data[k8s.NginxConfigKey] != "worker_processes 1;" || data[nginx.QueueScriptFile] != nginx.PoolScripts(p)[nginx.QueueScriptFile] {
		t.Errorf("ConfigMap keys %v, want nginx.conf and %s", slices.Sorted(maps.Keys(data)), nginx.QueueScriptFile)
	}
	without := k8s.Pool(pool(), "worker_processes 1;")
	if _, ok := without.ConfigMap.Data[nginx.QueueScriptFile]; ok {
		t.Error("a pool without a queue timeout got the queue script")
	}
	if objs.Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey] == without.Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey] {
		t.Error("adding the script did not change the pod template hash: a script change would not roll the pods")
	}
}

func TestAnAutoscaledPoolLeavesReplicasToTheAutoscaler(t *testing.T) {
	p := pool()
	p.Replicas = nil
	if r := k8s.Pool(p, "").Deployment.Spec.Replicas; r != nil {
		t.Errorf("replicas = %d, want unset so that the autoscaler owns the field", *r)
	}
}

// A leaving worker's nginx quits after its drain pause and closes what is
// still open (WebSockets) after nginx.ShutdownTimeout: both fit in the pod's
// grace period, so nginx closes them itself before the kubelet kills it.
func TestALeavingWorkersNginxClosesItsWebSocketsWithinTheGracePeriod(t *testing.T) {
	p := pool()
	spec := k8s.Pool(p, "").Deployment.Spec.Template.Spec
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	for _, c := range spec.Containers {
		if *c.Name != "nginx" {
			continue
		}
		pause := time.Duration(*c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		shutdown := nginx.ShutdownTimeout(p)
		t.Logf("drain pause %s, then at most %s to close open connections, grace period %s", pause, shutdown, grace)
		if pause+shutdown >= grace {
			t.Errorf("drain pause %s + nginx's shutdown timeout %s do not fit in the grace period %s", pause, shutdown, grace)
		}
		return
	}
	t.Fatal("the pool's pod has no nginx container")
}

// A leaving frontend's Envoy drains in its preStop hook (SIGTERM alone cuts
// open connections): the hook runs envoy-drain as the image installs it,
// with the command's own defaults, and ends within the grace period.
func TestALeavingFrontendDrainsEnvoyWithinTheGracePeriod(t *testing.T) {
	spec := k8s.Frontend(farm(), nil).Deployment.Spec.Template.Spec
	hook := spec.Containers[0].Lifecycle.PreStop
	if hook.Sleep != nil || hook.Exec == nil {
		t.Fatalf("preStop %+v, want an exec of envoy-drain", hook)
	}
	defaults := []string{drain.BinaryPath, "-admin=" + drain.DefaultAdmin,
		"-min=" + drain.DefaultMinimum.String(), "-max=" + drain.DefaultMaximum.String()}
	if got := hook.Exec.Command; !slices.Equal(got, defaults) {
		t.Fatalf("preStop runs %q, want envoy-drain's defaults %q", got, defaults)
	}
	if want := "127.0.0.1:" + strconv.Itoa(envoy.AdminPort); drain.DefaultAdmin != want {
		t.Errorf("envoy-drain's admin %s is not Envoy's %s", drain.DefaultAdmin, want)
	}
	if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; drain.DefaultMaximum >= grace {
		t.Errorf("the drain's maximum %s does not end within the grace period %s", drain.DefaultMaximum, grace)
	}
}

// probes are the probes of one container of a pool's worker pod.
type probes struct {
	liveness, startup, readiness *corev1ac.ProbeApplyConfiguration
}

func containerProbes(t *testing.T, p model.Pool, container string) probes {
	t.Helper()
	for _, c := range k8s.Pool(p, "").Deployment.Spec.Template.Spec.Containers {
		if *c.Name == container {
			return probes{c.LivenessProbe, c.StartupProbe, c.ReadinessProbe}
		}
	}
	t.Fatalf("the worker pod has no %s container", container)
	return probes{}
}

// The ping reaches what serves the pool (the app, or nginx serving the
// content), and each health field changes what the kubelet does.
func TestAWorkersPingFollowsThePoolsHealthCheck(t *testing.T) {
	withPing := func(change func(*model.Pool)) model.Pool {
		p := pool()
		change(&p)
		return p
	}
	static := withPing(func(p *model.Pool) { p.App = nil })
	tests := []struct {
		name      string
		pool      model.Pool
		container string
		check     func(t *testing.T, got probes)
	}{
		{
			name: "the app is pinged at the check's path on its own port, restarted after one ping unanswered for the response time",
			pool: pool(), container: "app",
			check: func(t *testing.T, got probes) {
				l := got.liveness
				if l == nil || l.HTTPGet == nil || *l.HTTPGet.Path != "/health" || l.HTTPGet.Port.String() != "app" {
					t.Fatalf("liveness probe %+v, want GET /health on the app port", l)
				}
				if *l.PeriodSeconds != 30 || *l.TimeoutSeconds != 90 || *l.FailureThreshold != 1 || *l.TerminationGracePeriodSeconds != 1 {
					t.Errorf("liveness every %ds, timeout %ds, %d failures, grace %ds; want 30, 90, 1, 1",
						*l.PeriodSeconds, *l.TimeoutSeconds, *l.FailureThreshold, *l.TerminationGracePeriodSeconds)
				}
			},
		},
		{
			name: "pingInterval and pingResponseTime set the liveness probe's period and timeout",
			pool: withPing(func(p *model.Pool) { p.Health.PingInterval, p.Health.PingResponseTime = 5*time.Second, 12*time.Second }), container: "app",
			check: func(t *testing.T, got probes) {
				if *got.liveness.PeriodSeconds != 5 || *got.liveness.TimeoutSeconds != 12 {
					t.Errorf("liveness every %ds, timeout %ds; want 5 and 12", *got.liveness.PeriodSeconds, *got.liveness.TimeoutSeconds)
				}
			},
		},
		{
			name: "pinging turned off leaves the app without a liveness probe but with its startup limit",
			pool: withPing(func(p *model.Pool) { p.Health.Pinging = false }), container: "app",
			check: func(t *testing.T, got probes) {
				if got.liveness != nil {
					t.Errorf("liveness probe %+v, want none", got.liveness)
				}
				if got.startup == nil {
					t.Error("no startup probe")
				}
			},
		},
		{
			name: "the startup time limit is that many one-second pings",
			pool: withPing(func(p *model.Pool) { p.Health.StartupTimeLimit = 5 * time.Minute }), container: "app",
			check: func(t *testing.T, got probes) {
				s := got.startup
				if s == nil || s.HTTPGet == nil || *s.HTTPGet.Path != "/health" {
					t.Fatalf("startup probe %+v, want GET /health", s)
				}
				if *s.PeriodSeconds != 1 || *s.TimeoutSeconds != 1 || *s.FailureThreshold != 300 {
					t.Errorf("startup every %ds, timeout %ds, %d failures; want 1, 1, 300", *s.PeriodSeconds, *s.TimeoutSeconds, *s.FailureThreshold)
				}
			},
		},
		{
			name: "a gRPC app is pinged by the gRPC health checking protocol",
			pool: withPing(func(p *model.Pool) { p.App = &model.App{Image: "g:1", Port: 9000, Protocol: model.AppGRPC} }), container: "app",
			check: func(t *testing.T, got probes) {
				for _, pr := range []*corev1ac.ProbeApplyConfiguration{got.liveness, got.startup} {
					if pr == nil || pr.GRPC == nil || *pr.GRPC.Port != 9000 {
						t.Errorf("probe %+v, want gRPC on port 9000", pr)
					}
				}
			},
		},
		{
			name: "an HTTP/2 app is pinged through nginx's HTTP/1.1 port",
			pool: withPing(func(p *model.Pool) { p.App = &model.App{Image: "h:1", Port: 9000, Protocol: model.AppHTTP2} }), container: "app",
			check: func(t *testing.T, got probes) {
				if l := got.liveness; l == nil || l.HTTPGet == nil || l.HTTPGet.Port.IntValue() != nginx.HTTPPort {
					t.Errorf("liveness probe %+v, want GET on port %d", l, nginx.HTTPPort)
				}
			},
		},
		{
			name: "nginx beside an app keeps its own liveness probe and no startup probe",
			pool: pool(), container: "nginx",
			check: func(t *testing.T, got probes) {
				if l := got.liveness; l == nil || l.HTTPGet == nil || *l.HTTPGet.Path != nginx.LivenessURI || got.startup != nil {
					t.Errorf("nginx liveness %+v, startup %+v; want its own %s and no startup probe", l, got.startup, nginx.LivenessURI)
				}
			},
		},
		{
			name: "without an app nginx is pinged by a request for the content",
			pool: static, container: "nginx",
			check: func(t *testing.T, got probes) {
				for _, pr := range []*corev1ac.ProbeApplyConfiguration{got.liveness, got.startup} {
					if pr == nil || pr.HTTPGet == nil || *pr.HTTPGet.Path != "/health" || pr.HTTPGet.Port.String() != "http" {
						t.Errorf("probe %+v, want GET /health on the http port", pr)
					}
				}
			},
		},
		{
			name: "without an app and with pinging turned off nginx keeps its own liveness probe",
			pool: withPing(func(p *model.Pool) { p.App, p.Health.Pinging = nil, false }), container: "nginx",
			check: func(t *testing.T, got probes) {
				if l := got.liveness; l == nil || l.HTTPGet == nil || *l.HTTPGet.Path != nginx.LivenessURI {
					t.Errorf("nginx liveness %+v, want its own %s", l, nginx.LivenessURI)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, containerProbes(t, tt.pool, tt.container)) })
	}
}

// The shutdown time limit is the worker pod's grace period, and nginx
// closes what it still has within it.
func TestAWorkerStopsWithinItsShutdownTimeLimit(t *testing.T) {
	for _, limit := range []time.Duration{11 * time.Second, 30 * time.Second, 90 * time.Second, time.Hour} {
		p := pool()
		p.Health.ShutdownTimeLimit = limit
		spec := k8s.Pool(p, "").Deployment.Spec.Template.Spec
		if got := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; got != limit {
			t.Errorf("limit %s: grace period %s", limit, got)
		}
		pause := time.Duration(*spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds) * time.Second // nginx's
		if end := pause + nginx.ShutdownTimeout(p); end >= limit {
			t.Errorf("limit %s: nginx closes its last connections %s after the stop, not before the limit", limit, end)
		}
	}
}
