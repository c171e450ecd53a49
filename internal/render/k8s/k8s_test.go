package k8s_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
)

var platform = model.Platform{
	Images:  model.Images{Envoy: "localhost/webfarm-envoy:1.40.0", Nginx: "localhost/webfarm-nginx:1.22.1", CacheAgent: "localhost/webfarm-operator:dev", PullPolicy: "IfNotPresent"},
	XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000,
}

func int32p(v int32) *int32 { return &v }

func farm() model.Farm {
	return model.Farm{
		Name: "shop", Namespace: "web", UID: "farm-uid", Platform: platform,
		Frontend: model.Frontend{Replicas: 2, ServiceType: "NodePort", Port: 80, NodePort: 30080, CPUMilli: 500, MemoryBytes: 256 << 20},
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
		Health:  model.HealthCheck{Path: "/health", Interval: 30 * time.Second, Timeout: 5 * time.Second, FailureThreshold: 3},
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
	c := k8s.Cache(cache(), "# nginx.conf\n", "{}\n")
	tests := []struct {
		name   string
		golden string
		objs   []any
	}{
		{"a farm gets an Envoy Deployment, its bootstrap, a Service and a ServiceAccount", "frontend.yaml", []any{fe.ServiceAccount, fe.ConfigMap, fe.Service, fe.Deployment}},
		{"a farm with HTTPS sites mounts each site's Secret, optional and read-only, and opens an https port", "frontend-tls.yaml", []any{tls.ConfigMap, tls.Service, tls.Deployment}},
		{"a pool gets nginx workers with its app (environment from values, a Secret and a ConfigMap; a Secret, a ConfigMap and a writable claim mounted), content, Service, disruption budget and identity", "pool.yaml", []any{p.ServiceAccount, p.ConfigMap, p.Service, p.Deployment, p.PodDisruptionBudget}},
		{"a pool whose app speaks gRPC takes HTTP/2 on its Service's port and is ready when the app answers gRPC health checks", "pool-grpc.yaml", []any{g.Deployment}},
		{"a cache policy gets nginx cache pods with in-memory storage", "cache.yaml", []any{c.ConfigMap, c.Service, c.Deployment}},
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
	a := k8s.Pool(pool(), "worker_processes 1;").Deployment.Spec.Template.Annotations[k8s.ConfigHashKey]
	b := k8s.Pool(pool(), "worker_processes 2;").Deployment.Spec.Template.Annotations[k8s.ConfigHashKey]
	again := k8s.Pool(pool(), "worker_processes 1;").Deployment.Spec.Template.Annotations[k8s.ConfigHashKey]
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
	if objs.Deployment.Spec.Template.Annotations[k8s.ConfigHashKey] == without.Deployment.Spec.Template.Annotations[k8s.ConfigHashKey] {
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
	spec := k8s.Pool(pool(), "").Deployment.Spec.Template.Spec
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	for _, c := range spec.Containers {
		if *c.Name != "nginx" {
			continue
		}
		pause := time.Duration(*c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		t.Logf("drain pause %s, then at most %s to close open connections, grace period %s", pause, nginx.ShutdownTimeout, grace)
		if pause+nginx.ShutdownTimeout >= grace {
			t.Errorf("drain pause %s + nginx's shutdown timeout %s do not fit in the grace period %s", pause, nginx.ShutdownTimeout, grace)
		}
		return
	}
	t.Fatal("the pool's pod has no nginx container")
}
