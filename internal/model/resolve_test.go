package model_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

func TestResolveFarmSortsSitesHostsAndRoutesLongestPrefixFirst(t *testing.T) {
	f := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "shop", Hosts: []v1.Hostname{"www.shop.example", "shop.example"}, Routes: []v1.Route{
			{PathPrefix: "/", AppPool: "shop"},
			{PathPrefix: "/static/img", AppPool: "img", CachePolicy: "static"},
			{PathPrefix: "/static", AppPool: "img", CachePolicy: "static"},
		}},
		{Name: "blog", Hosts: []v1.Hostname{"blog.example"}, Routes: []v1.Route{{AppPool: "blog"}}},
	}}}
	m, err := model.ResolveFarm(f, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{m.Sites[0].Name, m.Sites[1].Name}; !reflect.DeepEqual(got, []string{"blog", "shop"}) {
		t.Errorf("sites %v, want sorted by name", got)
	}
	if got := m.Sites[1].Hosts; !reflect.DeepEqual(got, []string{"shop.example", "www.shop.example"}) {
		t.Errorf("hosts %v, want sorted", got)
	}
	var prefixes []string
	for _, r := range m.Sites[1].Routes {
		prefixes = append(prefixes, r.PathPrefix)
	}
	if !reflect.DeepEqual(prefixes, []string{"/static/img", "/static", "/"}) {
		t.Errorf("routes %v, want the longest prefix first", prefixes)
	}
	if m.Sites[0].Routes[0].PathPrefix != "/" {
		t.Errorf("a route without a path prefix got %q, want /", m.Sites[0].Routes[0].PathPrefix)
	}
	if !reflect.DeepEqual(m.Pools, []string{"blog", "img", "shop"}) || !reflect.DeepEqual(m.CachePolicies, []string{"static"}) {
		t.Errorf("pools %v policies %v", m.Pools, m.CachePolicies)
	}
	if m.HostCount() != 3 {
		t.Errorf("HostCount() = %d, want 3", m.HostCount())
	}
}

// Objects built in code skip the API server's defaulting; the model applies
// the same IIS defaults so both paths render the same configs.
func TestResolveAppliesTheIISDefaultsToEmptyFields(t *testing.T) {
	pool, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "c"}}}}, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	if pool.QueueLength != 1000 || *pool.Replicas != 2 || pool.CPUMilli != 500 || pool.MaxConcurrentRequests != 100 ||
		pool.Health.Interval != 30*time.Second || pool.Health.Path != "/" || pool.Rollout != (model.Rollout{MaxSurge: 1}) {
		t.Errorf("pool defaults wrong: %+v", pool)
	}
	if h := pool.Health; !h.Pinging || h.PingInterval != 30*time.Second || h.PingResponseTime != 90*time.Second ||
		h.StartupTimeLimit != 90*time.Second || h.ShutdownTimeLimit != 90*time.Second {
		t.Errorf("health monitoring defaults %+v, want IIS's: pinging every 30 s, 90 s to answer, 90 s to start and to stop", h)
	}
	cache, err := model.ResolveCache(&v1.CachePolicy{}, nil, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	if cache.FrequentHitThreshold != 2 || cache.FrequentHitPeriod != 10*time.Second || cache.ObjectTTL != 30*time.Second ||
		cache.MaxObjectSizeBytes != 256<<10 || cache.MemorySizeBytes != 64<<20 {
		t.Errorf("cache defaults wrong: %+v", cache)
	}
	farm, err := model.ResolveFarm(&v1.WebFarm{}, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	if farm.Frontend.Replicas != 2 || farm.Frontend.ConnectionTimeout != 120*time.Second ||
		farm.Frontend.WebSocketIdleTimeout != 300*time.Second || farm.Affinity.Type != "None" || farm.RejectWithReset ||
		farm.Frontend.AccessLog != (model.AccessLog{Enabled: true, SamplePercent: 100}) {
		t.Errorf("farm defaults wrong: %+v", farm)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		resolve func() error
		wantErr string
	}{
		{"a cookie affinity without cookie settings gets the default cookie name", func() error {
			m, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{SessionAffinity: v1.SessionAffinity{Type: v1.AffinityCookie}}}, model.Platform{})
			if err == nil && m.Affinity.CookieName != v1.DefaultAffinityCookieName {
				t.Errorf("cookie name %q", m.Affinity.CookieName)
			}
			return err
		}, ""},
		{"an autoscaled pool starts at its minimum", func() error {
			m, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000},
				Autoscaling: &v1.Autoscaling{MinReplicas: 3, MaxReplicas: 9}}}, model.Platform{})
			if err == nil && ptr.Deref(m.Replicas, 0) != 3 {
				t.Errorf("replicas %v, want 3", m.Replicas)
			}
			return err
		}, ""},
		{"an access log turned off and sampled keeps both settings", func() error {
			m, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{
				AccessLog: v1.AccessLog{Enabled: new(false), SamplePercent: 10}}}}, model.Platform{})
			if err == nil && m.Frontend.AccessLog != (model.AccessLog{Enabled: false, SamplePercent: 10}) {
				t.Errorf("access log %+v", m.Frontend.AccessLog)
			}
			return err
		}, ""},
		{"an access log sampling more than 100 percent is refused", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{
				AccessLog: v1.AccessLog{SamplePercent: 150}}}}, model.Platform{})
			return err
		}, "frontend.accessLog.samplePercent 150: between 1 and 100"},
		{"frontend autoscaling without settings takes the defaults", func() error {
			m, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{
				Autoscaling: &v1.FrontendAutoscaling{}}}}, model.Platform{})
			if want := (model.Autoscaling{MinReplicas: 1, MaxReplicas: 4, TargetUtilization: 0.3, StabilizationWindow: 5 * time.Minute}); err == nil &&
				(m.Frontend.Autoscaling == nil || *m.Frontend.Autoscaling != want) {
				t.Errorf("frontend autoscaling %+v, want %+v", m.Frontend.Autoscaling, want)
			}
			return err
		}, ""},
		{"frontend autoscaling whose minimum exceeds its maximum is refused", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{
				Autoscaling: &v1.FrontendAutoscaling{MinReplicas: 3, MaxReplicas: 2}}}}, model.Platform{})
			return err
		}, "frontend.autoscaling: minReplicas 3 and maxReplicas 2 must satisfy 1 <= minReplicas <= maxReplicas <= 100"},
		{"a host name in two sites is refused, naming both sites", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{
				{Name: "a", Hosts: []v1.Hostname{"x.example", "shop.example"}, Routes: []v1.Route{{AppPool: "p"}}},
				{Name: "b", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "p"}}},
			}}}, model.Platform{})
			return err
		}, `host name "shop.example" belongs to sites "a" and "b"`},
		{"a route to a pool or cache policy name the API server could not hold is refused", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{
				{Name: "a", Hosts: []v1.Hostname{"x.example"}, Routes: []v1.Route{{AppPool: "p", CachePolicy: "\xff"}}},
			}}}, model.Platform{})
			return err
		}, `site "a" route "/": cachePolicy "\xff" is not a valid name`},
		{"a path prefix with a trailing slash matches the same segments without it", func() error {
			m, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{
				{Name: "a", Hosts: []v1.Hostname{"x.example"}, Routes: []v1.Route{{PathPrefix: "/api/", AppPool: "p"}, {PathPrefix: "/", AppPool: "p"}}},
			}}}, model.Platform{})
			if err == nil && (m.Sites[0].Routes[0].PathPrefix != "/api" || m.Sites[0].Routes[1].PathPrefix != "/") {
				t.Errorf("routes %v, want /api and /", m.Sites[0].Routes)
			}
			return err
		}, ""},
		{"a rollout that may neither add nor stop a worker is refused", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000},
				Rollout: v1.Rollout{MaxSurge: ptr.To[int32](0)}}}, model.Platform{})
			return err
		}, "maxSurge and maxUnavailable cannot both be 0"},
		{"a shutdown time limit no longer than the drain pause is refused", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000},
				HealthCheck: v1.HealthCheck{ShutdownTimeLimit: "10s"}}}, model.Platform{})
			return err
		}, "healthCheck.shutdownTimeLimit 10s: must be longer than the 10s drain pause"},
		{"pinging turned off and its times are kept", func() error {
			m, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000},
				HealthCheck: v1.HealthCheck{PingingEnabled: new(false), PingInterval: "5s", PingResponseTime: "20s", StartupTimeLimit: "3m", ShutdownTimeLimit: "45s"}}}, model.Platform{})
			if h := m.Health; err == nil && (h.Pinging || h.PingInterval != 5*time.Second || h.PingResponseTime != 20*time.Second ||
				h.StartupTimeLimit != 3*time.Minute || h.ShutdownTimeLimit != 45*time.Second) {
				t.Errorf("health %+v", h)
			}
			return err
		}, ""},
		{"trusted networks are masked, sorted and listed once", func() error {
			m, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{ClientAddress: v1.ClientAddress{
				TrustedNetworks: []v1.CIDR{"192.168.1.7/16", "10.0.0.0/8", "192.168.0.0/16"}}}}}, model.Platform{})
			if got := fmt.Sprint(m.Frontend.ClientAddress.TrustedNetworks); err == nil && got != "[10.0.0.0/8 192.168.0.0/16]" {
				t.Errorf("trusted networks %s", got)
			}
			return err
		}, ""},
		{"a trusted network that is not a CIDR is refused", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{ClientAddress: v1.ClientAddress{
				TrustedNetworks: []v1.CIDR{"10.0.0.0/8; rm"}}}}}, model.Platform{})
			return err
		}, `trustedNetworks: "10.0.0.0/8; rm" is not a CIDR`},
		{"an IPv4-mapped IPv6 trusted network, which no IPv4 connection matches, is refused", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{Spec: v1.WebFarmSpec{Frontend: v1.Frontend{ClientAddress: v1.ClientAddress{
				TrustedNetworks: []v1.CIDR{"::ffff:10.0.0.0/104"}}}}}, model.Platform{})
			return err
		}, `trustedNetworks: "::ffff:10.0.0.0/104" is IPv4-mapped IPv6: write the IPv4 network`},
		{"an app's environment takes keys of Secrets and ConfigMaps by reference", func() error {
			m, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Env: []v1.EnvVar{
				{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: v1.KeyRef{Name: "db", Key: "password"}}},
				{Name: "REGION", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: v1.KeyRef{Name: "settings", Key: "region", Optional: ptr.To(true)}}},
			}}}}, model.Platform{})
			want := []model.EnvVar{{Name: "PASSWORD", From: &model.KeyRef{Secret: true, Name: "db", Key: "password"}},
				{Name: "REGION", From: &model.KeyRef{Name: "settings", Key: "region", Optional: true}}}
			if err == nil && !reflect.DeepEqual(m.App.Env, want) {
				t.Errorf("env %+v, want %+v", m.App.Env, want)
			}
			return err
		}, ""},
		{"an app's volumes mount Secrets, ConfigMaps and claims by name, read-only unless a claim says otherwise", func() error {
			m, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "uploads", MountPath: "/srv/uploads", ReadOnly: ptr.To(false), PersistentVolumeClaim: v1.PersistentVolumeClaimContent{ClaimName: "uploads"}},
				{Name: "db", MountPath: "/etc/db", Secret: v1.SecretVolume{Name: "db.example"}},
				{Name: "settings", MountPath: "/etc/settings", ConfigMap: v1.ConfigMapVolume{Name: "settings", Optional: ptr.To(true)}},
			}}}}, model.Platform{})
			want := []model.Volume{
				{Name: "db", MountPath: "/etc/db", Kind: model.VolumeSecret, Object: "db.example", ReadOnly: true},
				{Name: "settings", MountPath: "/etc/settings", Kind: model.VolumeConfigMap, Object: "settings", Optional: true, ReadOnly: true},
				{Name: "uploads", MountPath: "/srv/uploads", Kind: model.VolumeClaim, Object: "uploads"},
			}
			if err == nil && !reflect.DeepEqual(m.App.Volumes, want) {
				t.Errorf("volumes %+v, want %+v", m.App.Volumes, want)
			}
			return err
		}, ""},
		{"a volume mounted over the app's /tmp never reaches the pod", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "db", MountPath: "/tmp", Secret: v1.SecretVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `app.volumes db: mountPath "/tmp" is, lies inside or contains /tmp`},
		{"a volume above the API token's folder never reaches the pod", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "db", MountPath: "/var/run/secrets", Secret: v1.SecretVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `contains /var/run/secrets/kubernetes.io/serviceaccount`},
		{"a volume path with a dot-dot segment never reaches the pod", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "db", MountPath: "/srv/../etc", Secret: v1.SecretVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `mountPath "/srv/../etc" may not have empty, '.' or '..' segments`},
		{"a relative volume path never reaches the pod", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "db", MountPath: "etc/db", Secret: v1.SecretVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `mountPath "etc/db" is not an absolute path`},
		{"two volumes at one path never reach the pod", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "a", MountPath: "/etc/db", Secret: v1.SecretVolume{Name: "db"}},
				{Name: "b", MountPath: "/etc/db", ConfigMap: v1.ConfigMapVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `app.volumes b: two volumes may not have the same mountPath "/etc/db"`},
		{"a writable Secret volume is refused", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "db", MountPath: "/etc/db", ReadOnly: ptr.To(false), Secret: v1.SecretVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `app.volumes db: readOnly may be false only for a persistentVolumeClaim`},
		{"a volume naming both a Secret and a ConfigMap is refused", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Volumes: []v1.AppVolume{
				{Name: "db", MountPath: "/etc/db", Secret: v1.SecretVolume{Name: "db"}, ConfigMap: v1.ConfigMapVolume{Name: "db"}}}}}}, model.Platform{})
			return err
		}, `app.volumes db: needs exactly one of secret, configMap or persistentVolumeClaim`},
		{"a pool with neither content nor app is refused", func() error {
			_, err := model.ResolvePool(&v1.AppPool{}, model.Platform{})
			return err
		}, "needs content, an app, or both"},
		{"a duration the API server would refuse is reported, not rendered", func() error {
			_, err := model.ResolveCache(&v1.CachePolicy{Spec: v1.CachePolicySpec{ObjectTTL: "soon"}}, nil, model.Platform{})
			return err
		}, `objectTTL: "soon" is not a duration`},
		{"a pool Service address that is not an IP never reaches nginx", func() error {
			_, err := model.ResolveCache(&v1.CachePolicy{}, []model.Upstream{{Pool: "a", Address: "10.0.0.1; evil", Port: 80}}, model.Platform{})
			return err
		}, "is not an IP address"},
		{"a pool name that is not a DNS label never reaches a cache tier's nginx.conf", func() error {
			_, err := model.ResolveCache(&v1.CachePolicy{}, []model.Upstream{{Pool: "a;\ninclude /etc/passwd", Address: "10.0.0.1", Port: 80}}, model.Platform{})
			return err
		}, "not a valid name"},
		{"a CachePolicy name the API server would refuse never reaches nginx.conf", func() error {
			_, err := model.ResolveCache(&v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Name: "x\nload_module /tmp/m.so;", Namespace: "web"}}, nil, model.Platform{})
			return err
		}, "not a valid name"},
		{"an AppPool namespace the API server would refuse never reaches nginx.conf", func() error {
			_, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "web\n}"},
				Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "c"}}}}, model.Platform{})
			return err
		}, "not a valid name"},
		{"a WebFarm name that is not valid UTF-8 never reaches the Envoy node", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "\xc0", Namespace: "web"}}, model.Platform{})
			return err
		}, "not a valid name"},
		{"an affinity cookie name outside the schema's pattern never reaches Envoy", func() error {
			_, err := model.ResolveFarm(&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"}, Spec: v1.WebFarmSpec{
				SessionAffinity: v1.SessionAffinity{Type: v1.AffinityCookie, Cookie: &v1.AffinityCookieSpec{Name: "a\xc0; Path=/"}}}}, model.Platform{})
			return err
		}, "sessionAffinity.cookie.name"},
		{"an app without a protocol speaks HTTP/1.1 and its workers take no HTTP/2", func() error {
			m, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000}}}, model.Platform{})
			if err == nil && (m.App.Protocol != model.AppHTTP || m.HTTP2()) {
				t.Errorf("protocol %q, HTTP/2 %v", m.App.Protocol, m.HTTP2())
			}
			return err
		}, ""},
		{"a gRPC app's workers take HTTP/2", func() error {
			m, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Protocol: v1.AppProtocolGRPC},
				Idle: v1.Idle{OnDemandStart: new(false)}}}, model.Platform{})
			if err == nil && !m.HTTP2() {
				t.Error("a gRPC pool's workers take no HTTP/2")
			}
			return err
		}, ""},
		{"an HTTP/2 app that would start on demand is refused", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Protocol: v1.AppProtocolHTTP2}}}, model.Platform{})
			return err
		}, "cannot start on demand"},
		{"an app protocol outside the schema's enum never reaches nginx", func() error {
			_, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "a", Port: 3000, Protocol: "SPDY"},
				Idle: v1.Idle{OnDemandStart: new(false)}}}, model.Platform{})
			return err
		}, `app protocol "SPDY"`},
		{"upstreams are sorted by pool so the config is stable", func() error {
			m, err := model.ResolveCache(&v1.CachePolicy{}, []model.Upstream{{Pool: "b", Address: "10.0.0.2", Port: 80}, {Pool: "a", Address: "10.0.0.1", Port: 80}}, model.Platform{})
			if err == nil && (m.Upstreams[0].Pool != "a" || m.Upstreams[1].Pool != "b") {
				t.Errorf("upstreams %v not sorted", m.Upstreams)
			}
			return err
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.resolve()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestResolvePoolCPULimit(t *testing.T) {
	cpu := resource.MustParse("400m")
	for _, tt := range []struct {
		name     string
		limit    v1.CPULimit
		stopped  bool
		wantCPU  int64
		wantCopy bool
		replicas int32
	}{
		{"Throttle caps each worker at the limit's share of its CPU", v1.CPULimit{Percent: 25, Action: v1.CPULimitThrottle}, false, 100, true, 2},
		{"Report leaves the workers' CPU alone", v1.CPULimit{Percent: 25, Action: v1.CPULimitReport}, false, 400, true, 2},
		{"an unset action reports", v1.CPULimit{Percent: 25}, false, 400, true, 2},
		{"no limit, no monitor", v1.CPULimit{}, false, 400, false, 2},
		{"a stopped pool runs no workers, whatever its spec asks", v1.CPULimit{}, true, 400, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ap := &v1.AppPool{Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "c"}}, CPU: &cpu, CPULimit: tt.limit}}
			// The status does not reach the model: where the pool stands is
			// added as its runtime.
			ap.Status.Phase = v1.PoolStopped
			p, err := model.ResolvePool(ap, model.Platform{})
			if err != nil {
				t.Fatal(err)
			}
			p = p.WithRuntime(model.Runtime{Stopped: tt.stopped, Replicas: *p.Replicas})
			if p.CPUMilli != tt.wantCPU || (p.CPULimit != nil) != tt.wantCopy || *p.Replicas != tt.replicas {
				t.Errorf("cpu %dm, limit %+v, replicas %d; want %dm, limit set %v, %d", p.CPUMilli, p.CPULimit, *p.Replicas, tt.wantCPU, tt.wantCopy, tt.replicas)
			}
			if p.CPULimit != nil && (p.CPULimit.Interval != 5*time.Minute || p.CPULimit.Action == "") {
				t.Errorf("limit %+v, want the 5 min default interval and an action", p.CPULimit)
			}
		})
	}
}
