package xds

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// sitesFarm has one site per host given, each routed to the pool "web".
func sitesFarm(xdsPort int, hosts ...string) model.Farm {
	f := model.Farm{Namespace: "web", Name: "hosting", Pools: []string{"web"},
		Platform: model.Platform{XDSHost: "127.0.0.1", XDSPort: int32(xdsPort)},
		Frontend: model.Frontend{Replicas: 1, RequestTimeout: 30 * time.Second, KeepAlive: true}}
	for _, h := range hosts {
		f.Sites = append(f.Sites, model.Site{Name: h, Hosts: []string{h}, Routes: []model.Route{{PathPrefix: "/", Pool: "web"}}})
	}
	return f
}

// liveFarm is the server with the real Envoy connected, bootstrapped as a
// farm's frontend is, its sites routed to one pool on loopback.
type liveFarm struct {
	tb       testing.TB
	ctx      context.Context
	server   *Server
	farm     model.Farm
	backends endpoints.Backends
	hosts    *envoy.VirtualHosts
	httpPort int
	admin    string
}

// startLiveFarm serves a farm of the sites given (one host each) to a new
// Envoy, and waits until it is ready.
func startLiveFarm(tb testing.TB, envoyBin string, hosts ...string) *liveFarm {
	tb.Helper()
	pool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "web") }))
	tb.Cleanup(pool.Close)
	poolHost, poolPortText, _ := net.SplitHostPort(pool.Listener.Addr().String())
	poolPort, _ := strconv.Atoi(poolPortText)
	free, err := testutil.FreePorts(4)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := NewServer("127.0.0.1:"+strconv.Itoa(free[0]), nil)
	served := make(chan error, 1)
	go func() { served <- s.Start(ctx) }()
	tb.Cleanup(func() { cancel(); <-served })
	l := &liveFarm{tb: tb, ctx: ctx, server: s, farm: sitesFarm(free[0], hosts...), hosts: &envoy.VirtualHosts{}, httpPort: free[1],
		backends: endpoints.Backends{vocabulary.PoolCluster("web"): {{Address: poolHost, Port: uint32(poolPort)}}}}
	l.update()
	l.admin = startEnvoy(tb, envoyBin, l.farm, free[2], free[3])
	return l
}

// update serves the farm as it is now, as the routing controller does.
func (l *liveFarm) update() {
	l.tb.Helper()
	l.updateWith(func(*envoy.Routing) {})
}

// updateWith serves the farm as it is now, changed by change.
func (l *liveFarm) updateWith(change func(*envoy.Routing)) {
	l.tb.Helper()
	r, err := envoy.FarmRoutingReusing(l.farm, map[string]model.Pool{"web": {Name: "web", MaxConcurrentRequests: 100, QueueLength: 1000}}, l.backends, l.hosts)
	if err != nil {
		l.tb.Fatal(err)
	}
	// The farm's listener binds the pod's port: a free loopback one here.
	r.Listeners[0].Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(l.httpPort)}}}}
	change(&r)
	if err := l.server.Update(l.ctx, envoy.NodeCluster(l.farm), r); err != nil {
		l.tb.Fatal(err)
	}
}

// answers checks that Envoy answers a request for host with the status given.
func (l *liveFarm) answers(host string, want int) func() error {
	return func() error {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(l.httpPort)+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			return fmt.Errorf("%s answered %d, want %d", host, resp.StatusCode, want)
		}
		return nil
	}
}

func siteHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("site-%05d.example", i)
	}
	return hosts
}

// TestOneSiteChangeReachesEnvoyAsOneVirtualHost runs the real Envoy, as a
// farm's frontend is bootstrapped, against the server: sites are served,
// a site's new host is served and its old one no longer, and the change
// reaches Envoy as a delta of one virtual host, not the farm's routes.
func TestOneSiteChangeReachesEnvoyAsOneVirtualHost(t *testing.T) {
	hosts := siteHosts(50)
	l := startLiveFarm(t, testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), hosts...)
	for _, h := range []string{hosts[0], hosts[49]} {
		testutil.Eventually(t, 30*time.Second, l.answers(h, http.StatusOK))
	}
	updatesBefore := stat(t, l.admin, "vhds.farm.update_success")
	sent := func(kind string) float64 {
		return promtestutil.ToFloat64(resourcesSent.WithLabelValues(envoy.NodeCluster(l.farm), kind))
	}
	hostsBefore, routesBefore := sent("VirtualHost"), sent("RouteConfiguration")

	l.farm.Sites[7].Hosts = []string{"renamed.example"}
	l.update()
	testutil.Eventually(t, 10*time.Second, l.answers("renamed.example", http.StatusOK))
	testutil.Eventually(t, 10*time.Second, l.answers(hosts[7], http.StatusNotFound))
	if err := l.answers(hosts[8], http.StatusOK)(); err != nil {
		t.Errorf("a site that did not change: %v", err)
	}
	if got := stat(t, l.admin, "vhds.farm.update_success") - updatesBefore; got != 1 {
		t.Errorf("Envoy took %d VHDS updates for one site's change, want 1", got)
	}
	if got := sent("VirtualHost") - hostsBefore; got != 1 {
		t.Errorf("one site's change sent %v virtual hosts, want 1", got)
	}
	if got := sent("RouteConfiguration") - routesBefore; got != 0 {
		t.Errorf("one site's change sent %v route configurations, want none", got)
	}
}

// TestARejectedConfigurationIsKeptUntilALaterOneIsTaken runs the real
// Envoy against the server: it takes the version sent; a version it refuses
// (a cluster with a negative connect timeout, which the renderer never
// makes) is kept as the farm's rejection with Envoy's message and node while
// Envoy runs its previous version, an update of another kind of resource
// does not clear it, and a later good version does.
func TestARejectedConfigurationIsKeptUntilALaterOneIsTaken(t *testing.T) {
	l := startLiveFarm(t, testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), "a.example")
	farm := envoy.NodeCluster(l.farm)
	good, _ := l.server.Routing(farm)
	testutil.Eventually(t, 10*time.Second, runs(l.admin, "cluster_manager.cds", good.Version))
	if r, ok := l.server.Rejection(farm); ok {
		t.Fatalf("a rejection before any: %+v", r)
	}
	reads(t, l.admin, envoystats.Config{Version: good.Version})

	badCluster := func(r *envoy.Routing) {
		r.Clusters[0].ConnectTimeout = durationpb.New(-time.Second)
		r.Version += "-bad"
	}
	l.updateWith(badCluster)
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, ok := l.server.Rejection(farm); !ok {
			return fmt.Errorf("no rejection yet")
		}
		return nil
	})
	r, _ := l.server.Rejection(farm)
	if r.Node != "live-test" || r.Version != good.Version+"-bad" || r.TypeURL != resourcev3.ClusterType || !strings.Contains(r.Message, "Expected positive duration") {
		t.Errorf("rejection %+v, want node live-test, version %s-bad, type %s and Envoy's message on the negative duration", r, good.Version, resourcev3.ClusterType)
	}
	if got := stat(t, l.admin, "cds.update_rejected"); got != 1 {
		t.Errorf("Envoy counted %d CDS rejections, want 1", got)
	}
	if err := runs(l.admin, "cluster_manager.cds", good.Version)(); err != nil {
		t.Errorf("after the rejection: %v", err)
	}
	reads(t, l.admin, envoystats.Config{Version: good.Version, Rejected: 1})

	// A site's change, the bad cluster still in: Envoy takes the new virtual
	// host, which says nothing of the clusters.
	l.farm.Sites[0].Hosts = []string{"b.example"}
	l.updateWith(badCluster)
	testutil.Eventually(t, 10*time.Second, l.answers("b.example", http.StatusOK))
	if _, ok := l.server.Rejection(farm); !ok {
		t.Errorf("a virtual host's update cleared the clusters' rejection")
	}
	// Envoy's counters show the version it took last, not that its clusters
	// are those of an older one: only the server's rejection tells.
	partly, _ := l.server.Routing(farm)
	reads(t, l.admin, envoystats.Config{Version: partly.Version, Rejected: uint64(stat(t, l.admin, "cds.update_rejected"))})

	l.update()
	fixed, _ := l.server.Routing(farm)
	testutil.Eventually(t, 10*time.Second, runs(l.admin, "cluster_manager.cds", fixed.Version))
	testutil.Eventually(t, 10*time.Second, func() error {
		if r, ok := l.server.Rejection(farm); ok {
			return fmt.Errorf("still a rejection after a good version: %+v", r)
		}
		return nil
	})
}

// reads checks what the frontend stats collector reads of Envoy's page.
func reads(t *testing.T, admin string, want envoystats.Config) {
	t.Helper()
	resp, err := http.Get(admin + vocabulary.FrontendMetricsPath + "?" + envoystats.ConfigQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := envoystats.Configuration(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("read %+v of Envoy's page, want %+v", got, want)
	}
}

// runs checks that Envoy's subscription (a stat prefix) took version.
func runs(admin, subscription, version string) func() error {
	return func() error {
		resp, err := http.Get(admin + "/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(subscription)+`\.version_text$`))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if want := subscription + `.version_text: "` + version + `"`; strings.TrimSpace(string(body)) != want {
			return fmt.Errorf("Envoy says %q, want %q", strings.TrimSpace(string(body)), want)
		}
		return nil
	}
}

// BenchmarkOneSiteChangeServedAmong20000Sites times one site's new host,
// from the update of the xDS server's snapshot until Envoy serves it, with
// 20,000 sites loaded: the operator's rendering of the change, the delta
// sent, and Envoy's rebuild of its route table. Run it with
// go test -run '^$' -bench OneSiteChange ./internal/xds/
// (WEBFARM_ENVOY or bin/envoy).
func BenchmarkOneSiteChangeServedAmong20000Sites(b *testing.B) {
	envoyBin := os.Getenv("WEBFARM_ENVOY")
	if envoyBin == "" {
		envoyBin = filepath.Join(testutil.RepoRoot(), "bin", "envoy")
	}
	hosts := siteHosts(20000)
	l := startLiveFarm(b, envoyBin, hosts...)
	testutil.Eventually(b, time.Minute, l.answers(hosts[19999], http.StatusOK))
	var rendering time.Duration
	b.ResetTimer()
	for i := range b.N {
		host := fmt.Sprintf("changed-%d.example", i)
		l.farm.Sites[i%len(hosts)].Hosts = []string{host}
		start := time.Now()
		l.update()
		rendering += time.Since(start)
		testutil.Eventually(b, time.Minute, l.answers(host, http.StatusOK))
	}
	b.ReportMetric(float64(rendering.Milliseconds())/float64(b.N), "ms-operator/op")
}

// startEnvoy runs Envoy with the farm's bootstrap, its status listener and
// admin interface moved to loopback ports; it returns the admin URL.
func startEnvoy(t testing.TB, envoyBin string, f model.Farm, statusPort, adminPort int) string {
	t.Helper()
	return startEnvoyWith(t, envoyBin, f, statusPort, adminPort, func(doc string) string { return doc }, true)
}

// startEnvoyWith is startEnvoy with the pod's paths of the bootstrap moved
// by local, waiting for Envoy to be ready or not.
func startEnvoyWith(t testing.TB, envoyBin string, f model.Farm, statusPort, adminPort int, local func(string) string, waitReady bool) string {
	t.Helper()
	doc, err := envoy.Bootstrap(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(doc, &b); err != nil {
		t.Fatal(err)
	}
	xdsCluster := b.StaticResources.Clusters[len(b.StaticResources.Clusters)-1]
	if err := localenvoy.Localize(&b, localenvoy.Ports{Status: statusPort, Admin: adminPort}); err != nil {
		t.Fatal(err)
	}
	// Localize drops the xDS cluster (its frontends are static): this one is not.
	b.StaticResources.Clusters = append(b.StaticResources.Clusters, xdsCluster)
	// The operator's name resolves to IPv6 first on some hosts; the server
	// listens on IPv4 loopback.
	xdsCluster.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
	out, err := protojson.Marshal(&b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "envoy.json")
	if err := os.WriteFile(path, []byte(local(string(out))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(envoyBin, append([]string{"-c", path, "-l", "warning", "--use-dynamic-base-id", "--concurrency", "1"},
		envoy.NodeIDArgs("live-test")...)...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("envoy's log:\n%s", log.String())
		}
	})
	admin := "http://127.0.0.1:" + strconv.Itoa(adminPort)
	if !waitReady {
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := http.Get(admin + "/ready")
			if err == nil {
				resp.Body.Close()
			}
			return err
		})
		return admin
	}
	ready := "http://127.0.0.1:" + strconv.Itoa(statusPort) + vocabulary.FrontendReadyPath
	testutil.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get(ready)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d", ready, resp.StatusCode)
		}
		return nil
	})
	return "http://127.0.0.1:" + strconv.Itoa(adminPort)
}

// stat is one of Envoy's counters whose name ends with suffix.
func stat(t testing.TB, admin, suffix string) int64 {
	t.Helper()
	resp, err := http.Get(admin + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, ": ")
		if ok && strings.HasSuffix(name, "."+suffix) {
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("envoy has no stat ending in %s:\n%s", suffix, body)
	return 0
}
