package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// route is one way from the client to the pool's files.
type route struct {
	name     string
	id       string // names the route's files
	proto    protocol
	farm     bool
	baseline bool
	minimal  bool // the minimal Envoy, which the farm's overhead is measured against
	// envoyGateway: Envoy with Envoy Gateway's configuration of the same
	// case, which the farm is compared with (envoygateway.go).
	envoyGateway bool
	// feature, in a run of features, names the feature this farm path goes
	// without ("": the farm as rendered).
	feature string
	// url is the scheme and authority the client asks for: the server's in
	// clear text, the site's over TLS (then the client connects to addr).
	url    string
	addr   string
	client *http.Client     // checks the files before the load (nil: a plain client)
	front  *benchkit.Server // the proxy hop; nil for bare nginx
	args   []string         // Envoy's command line, without the binary
	admin  string           // Envoy's admin address ("": not an Envoy)
	cert   *certificate     // over TLS: the certificate the server serves
}

// readyTimeout bounds each server's start.
const readyTimeout = 20 * time.Second

// bench starts the servers, measures every route on every workload and
// stops every process it started before it returns, also on error or Ctrl-C.
func bench(ctx context.Context, o options, dir string) (*report, error) {
	rep := &report{o: o, start: time.Now(), machine: benchkit.Machine()}
	rep.loadBefore = loadAverage("before the run")
	defer func() { rep.loadAfter = loadAverage("after the run") }()
	var procs servers
	defer procs.stopAll()

	inputs, err := writeFiles(dir, o.workloads)
	if err != nil {
		return nil, err
	}
	if o.handshakes {
		err := benchWorkerCounts(ctx, o, dir, inputs, rep)
		rep.wall = time.Since(rep.start)
		return rep, err
	}
	routes, pool, err := startRoutes(ctx, o, dir, &procs)
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		if r.farm {
			rep.envoyArgs = r.args // the first farm route is the farm as rendered
			break
		}
	}
	// Every route serves every file, byte for byte, before any load.
	if err := verify(ctx, routes, o.workloads); err != nil {
		return nil, err
	}
	logf("servers ready: pool nginx pid %d; %d routes; clients: wrk, %d connections, %d thread(s); h2load, %d connections over HTTPS, %d x %d streams over HTTP/2; %s per measurement, %d rounds",
		pool.PID(), len(routes), o.Connections, o.Threads, o.h2load.Connections, o.h2load.H2Connections, o.h2load.Streams, o.duration, o.rounds)

	for _, w := range o.workloads {
		for _, p := range o.protocols {
			group := slices.DeleteFunc(slices.Clone(routes), func(r *route) bool { return r.proto != p })
			if len(group) == 0 {
				continue
			}
			res, err := measureWorkload(ctx, o, w, p, group, pool, inputs[w.name])
			if res != nil {
				rep.results = append(rep.results, res)
			}
			if err != nil {
				return rep, err
			}
		}
	}
	if o.perfOut != "" {
		// Every proxy hop, nginx's and Envoy's, under the first workload.
		var hops []*route
		for _, r := range routes {
			if r.front != nil {
				hops = append(hops, r)
			}
		}
		if err := profileRoutes(ctx, o, hops, inputs[o.workloads[0].name], o.perfOut); err != nil {
			return rep, fmt.Errorf("profiling: %w", err)
		}
	}
	rep.wall = time.Since(rep.start)
	if failures := rep.failures(); len(failures) > 0 {
		return rep, fmt.Errorf("routes answered wrongly: %s", strings.Join(failures, "; "))
	}
	return rep, nil
}

// loadAverage logs and returns the machine's load average ("" when it
// cannot be read: the report says unknown).
func loadAverage(when string) string {
	avg, err := benchkit.LoadAverage()
	if err != nil {
		logf("load average %s: %v", when, err)
		return ""
	}
	logf("load average (1, 5, 15 min) %s: %s", when, avg)
	return avg
}

// writeFiles writes the workloads' files and the clients' inputs (by
// workload name) into dir.
func writeFiles(dir string, ws []workload) (map[string]loadInput, error) {
	if err := os.Chmod(dir, 0o755); err != nil { // nginx workers run as another user
		return nil, err
	}
	if err := writeContent(filepath.Join(dir, "www"), ws); err != nil {
		return nil, err
	}
	inputs := map[string]loadInput{}
	for _, w := range ws {
		in := loadInput{script: filepath.Join(dir, w.name+".lua"), uris: filepath.Join(dir, w.name+".uris")}
		if err := os.WriteFile(in.script, []byte(wrkScript(w)), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(in.uris, []byte(h2loadURIs(w)), 0o644); err != nil {
			return nil, err
		}
		inputs[w.name] = in
	}
	return inputs, nil
}

// farmVariants are the farm paths of a run: as rendered, then the tuned
// one, or one per tuning step, or one per feature.
func farmVariants(o options) []variant {
	variants := []variant{{}}
	switch {
	case len(o.steps) > 0:
		var sum []setting
		for _, step := range o.steps {
			sum = append(slices.Clone(sum), step...)
			variants = append(variants, variant{settings: sum, added: len(step)})
		}
	case o.features:
		for _, f := range features {
			variants = append(variants, variant{settings: f.off, feature: f.name})
		}
	case len(o.tuning) > 0:
		variants = append(variants, variant{settings: o.tuning})
	}
	return variants
}

// startRoutes starts the pool worker and every proxy in front of it. A run
// of tuning steps has only farm routes, a run of features farm routes and
// the minimal Envoy.
func startRoutes(ctx context.Context, o options, dir string, procs *servers) ([]*route, *benchkit.Server, error) {
	variants := farmVariants(o)
	ports, err := benchkit.FreePorts(3)
	if err != nil {
		return nil, nil, err
	}
	layout := benchkit.PoolLayout{ContentDir: filepath.Join(dir, "www"), TmpDir: filepath.Join(dir, "pool"), HTTPPort: ports[0], StatusPort: ports[1]}
	for _, v := range variants {
		if slices.ContainsFunc(v.settings, func(s setting) bool { return s.knob.name == "upstream-h2" }) {
			layout.H2Port = ports[2]
		}
	}
	poolModel, err := benchPool()
	if err != nil {
		return nil, nil, err
	}
	pool, err := startPool(ctx, o, poolModel, layout, procs)
	if err != nil {
		return nil, nil, err
	}

	var routes []*route
	plain := slices.Contains(o.protocols, protoHTTP)
	if len(o.steps) == 0 && !o.features && plain {
		routes = append(routes, &route{name: "bare nginx (the pool worker)", id: "bare", proto: protoHTTP, url: fmt.Sprintf("http://127.0.0.1:%d", layout.HTTPPort)})
		proxy, err := startProxy(ctx, o, filepath.Join(dir, "proxy"), layout.HTTPPort, false, nil, procs)
		if err != nil {
			return nil, nil, err
		}
		routes = append(routes, proxy...)
		if o.bufferedProxy {
			buffered, err := startProxy(ctx, o, filepath.Join(dir, "proxy-buffered"), layout.HTTPPort, true, nil, procs)
			if err != nil {
				return nil, nil, err
			}
			routes = append(routes, buffered...)
		}
	}
	if plain {
		farm, err := benchFarm()
		if err != nil {
			return nil, nil, err
		}
		if len(o.steps) == 0 {
			minimal, err := startMinimal(ctx, o, farm, filepath.Join(dir, "minimal"), layout.HTTPPort, nil, procs)
			if err != nil {
				return nil, nil, err
			}
			routes = append(routes, minimal...)
		}
		if o.envoyGateway && len(o.steps) == 0 && !o.features {
			eg, err := startEnvoyGateway(ctx, o, farm, filepath.Join(dir, "envoygateway"), layout.HTTPPort, nil, procs)
			if err != nil {
				return nil, nil, err
			}
			routes = append(routes, eg...)
		}
		for i, v := range variants {
			r, err := startFrontend(ctx, o, farm, poolModel, v, filepath.Join(dir, fmt.Sprintf("envoy-%d", i)), layout, nil, procs)
			if err != nil {
				return nil, nil, err
			}
			routes = append(routes, r...)
		}
	}
	if slices.Contains(o.protocols, protoHTTPS) || slices.Contains(o.protocols, protoH2) {
		tlsRoutes, err := startTLSRoutes(ctx, o, dir, poolModel, layout, variants, procs)
		if err != nil {
			return nil, nil, err
		}
		routes = append(routes, tlsRoutes...)
	}
	return routes, pool, nil
}

// startTLSRoutes starts the HTTPS contenders, all with the same
// certificate: the nginx proxy with TLS (the baseline), the minimal Envoy
// and the farm's frontend with a TLS site, each reached over HTTPS and
// HTTP/2. A run of features has no proxy and a farm path per feature.
func startTLSRoutes(ctx context.Context, o options, dir string, poolModel model.Pool, layout benchkit.PoolLayout, variants []variant, procs *servers) ([]*route, error) {
	cert, err := newCertificate()
	if err != nil {
		return nil, err
	}
	var proxy []*route
	if !o.features {
		if proxy, err = startProxy(ctx, o, filepath.Join(dir, "proxy-tls"), layout.HTTPPort, false, cert, procs); err != nil {
			return nil, err
		}
		variants = variants[:1] // the farm as rendered: the tuning is measured in clear text
	}
	farm, err := benchTLSFarm()
	if err != nil {
		return nil, err
	}
	minimal, err := startMinimal(ctx, o, farm, filepath.Join(dir, "minimal-tls"), layout.HTTPPort, cert, procs)
	if err != nil {
		return nil, err
	}
	var eg []*route
	if o.envoyGateway && !o.features {
		if eg, err = startEnvoyGateway(ctx, o, farm, filepath.Join(dir, "envoygateway-tls"), layout.HTTPPort, cert, procs); err != nil {
			return nil, err
		}
	}
	var fronts []*route
	for i, v := range variants {
		dir := filepath.Join(dir, "envoy-tls")
		if i > 0 {
			dir += fmt.Sprintf("-%d", i)
		}
		front, err := startFrontend(ctx, o, farm, poolModel, v, dir, layout, cert, procs)
		if err != nil {
			return nil, err
		}
		fronts = append(fronts, front...)
	}
	var out []*route
	for _, r := range slices.Concat(proxy, minimal, eg, fronts) {
		if slices.Contains(o.protocols, r.proto) {
			out = append(out, r)
		}
	}
	return out, nil
}

// measureWorkload warms every route up, then measures them in interleaved
// rounds, or, in a run of tuning steps, pairwise (steps.go).
func measureWorkload(ctx context.Context, o options, w workload, p protocol, routes []*route, pool *benchkit.Server, in loadInput) (*workloadResult, error) {
	res := &workloadResult{w: w, proto: p}
	for _, r := range routes {
		res.routes = append(res.routes, &routeResult{name: r.name, farm: r.farm, baseline: r.baseline, minimal: r.minimal, envoyGateway: r.envoyGateway, hop: r.front != nil})
	}
	// A route that answers wrongly (a status other than 2xx/3xx, a reset)
	// has no figures worth reporting: it is dropped from the workload and
	// reported as failed, and the others go on. Only the baseline is needed.
	failed := func(i int, err error) error {
		if !errors.Is(err, benchkit.ErrWrongAnswers) || routes[i].baseline || len(o.steps) > 0 || o.features {
			return err
		}
		res.routes[i].failure = err.Error()
		logf("%s, %s: %s: %v", w.name, p, routes[i].name, err)
		return nil
	}
	if o.warmup > 0 {
		for i, r := range routes {
			if _, _, err := o.run(ctx, r, in, o.warmup); err != nil {
				if err := failed(i, err); err != nil {
					return res, fmt.Errorf("warming up %s: %w", r.name, err)
				}
			}
		}
	}
	if len(o.steps) > 0 {
		var err error
		res.steps, err = benchSteps(ctx, o, routes, pool, in, w)
		return res, err
	}
	if o.features {
		var err error
		res.features, err = benchFeatures(ctx, o, routes, pool, in, w)
		return res, err
	}
	for round := range o.rounds {
		// Each round starts with another route, so that no route always
		// follows the same one.
		for k := range routes {
			i := (k + round) % len(routes)
			if res.routes[i].failure != "" {
				continue
			}
			if err := benchkit.WaitQuiet(ctx, o.quietBelow, o.quietWait); err != nil {
				return res, err
			}
			s, err := measure(ctx, o.client, routes[i], pool, in)
			if err != nil {
				if err := failed(i, err); err != nil {
					return res, err
				}
				continue
			}
			res.routes[i].samples = append(res.routes[i].samples, s)
			logf("%s, %s, round %d/%d, %s: %.0f req/s, p50 %s, p99 %s", w.name, p, round+1, o.rounds, routes[i].name,
				s.requestsPerSecond, s.p50, s.p99)
		}
	}
	return res, nil
}

func startPool(ctx context.Context, o options, p model.Pool, l benchkit.PoolLayout, procs *servers) (*benchkit.Server, error) {
	conf, err := benchkit.PoolConfig(p, l)
	if err != nil {
		return nil, err
	}
	// The scripts nginx.conf names (the queue timeout's), beside it as in a pod.
	if err := os.MkdirAll(l.TmpDir, 0o755); err != nil {
		return nil, err
	}
	for name, body := range nginx.PoolScripts(p) {
		if err := os.WriteFile(filepath.Join(l.TmpDir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	s, err := startNginx(o.nginx, "pool nginx", l.TmpDir, conf, o.CPUs, procs)
	if err != nil {
		return nil, err
	}
	return s, benchkit.WaitReady(ctx, s, fmt.Sprintf("http://127.0.0.1:%d/healthz", l.StatusPort), "", readyTimeout)
}

// startProxy starts an nginx proxy to the pool: the baseline, or with
// buffered responses (nginx's default, not ingress-nginx's) a reference.
// With a certificate it is the HTTPS baseline, one route per TLS protocol.
func startProxy(ctx context.Context, o options, dir string, upstream int, buffered bool, cert *certificate, procs *servers) ([]*route, error) {
	ports, err := benchkit.FreePorts(1)
	if err != nil {
		return nil, err
	}
	layout := benchkit.ProxyLayout{TmpDir: dir, Port: ports[0], Upstream: upstream, Workers: o.proxyWorkers, BufferResponses: buffered, AccessLog: true}
	if cert != nil {
		if layout.TLS, err = cert.writeFiles(dir); err != nil {
			return nil, err
		}
	}
	conf, err := benchkit.ProxyConfig(layout)
	if err != nil {
		return nil, err
	}
	s, err := startNginx(o.nginx, "proxy nginx", dir, conf, o.hopCPUs, procs)
	if err != nil {
		return nil, err
	}
	// Ready when it proxies: any file will do.
	first := o.workloads[0].files[0].path
	if cert != nil {
		routes := httpsRoutes(route{name: "nginx proxy with TLS -> nginx (baseline)", id: "proxy-tls", baseline: true,
			addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), front: s}, cert)
		return routes, waitHTTPS(ctx, routes[0], s, first)
	}
	r := &route{name: "nginx proxy -> nginx (baseline)", id: "proxy", proto: protoHTTP, baseline: true, url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), front: s}
	if buffered {
		r.name, r.id, r.baseline = "nginx proxy, proxy_buffering on -> nginx", "proxy-buffered", false
	}
	return []*route{r}, benchkit.WaitReady(ctx, s, r.url+first, siteHost, readyTimeout)
}

// startNginx writes conf into dir and starts nginx on it, stopped with procs.
func startNginx(bin, name, dir, conf, cpus string, procs *servers) (*benchkit.Server, error) {
	s, err := benchkit.StartNginx(bin, name, dir, conf, cpus)
	if err != nil {
		return nil, err
	}
	procs.add(s)
	return s, nil
}

// startFrontend renders the farm's frontend, applies the settings and
// starts Envoy. A farm with a TLS site gets the certificate, and a route per
// TLS protocol.
func startFrontend(ctx context.Context, o options, farm model.Farm, pool model.Pool, v variant, dir string, layout benchkit.PoolLayout, cert *certificate, procs *servers) ([]*route, error) {
	ports, err := benchkit.FreePorts(4)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "envoy.json")
	f, err := farmFrontend(farm, pool, v.settings, layout, localenvoy.Ports{HTTP: ports[0], Status: ports[1], Admin: ports[2], HTTPS: ports[3]}, path)
	if err != nil {
		return nil, err
	}
	if o.envoyWorkers > 0 {
		f.args = withConcurrency(f.args, o.envoyWorkers)
	}
	if o.exactBalance {
		balanceExactly(f.bootstrap)
	}
	admin := fmt.Sprintf("127.0.0.1:%d", ports[2])
	conf, err := bootstrapJSON(f.bootstrap)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if conf, err = writeCertificates(dir, farm, conf, cert); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		return nil, err
	}
	tlsSites := farm.TLSSites()
	s, err := benchkit.StartServer("envoy", filepath.Join(dir, "envoy.log"), o.hopCPUs, append([]string{o.envoy}, f.args...)...)
	if err != nil {
		return nil, err
	}
	procs.add(s)
	if err := benchkit.WaitReady(ctx, s, fmt.Sprintf("http://127.0.0.1:%d%s", ports[1], vocabulary.FrontendReadyPath), "", readyTimeout); err != nil {
		return nil, err
	}
	if len(tlsSites) > 0 {
		name := "farm with TLS: Envoy -> nginx, as rendered"
		if len(v.settings) > 0 {
			name = "farm with TLS, " + strings.TrimPrefix(v.name(), "farm, ")
		}
		routes := httpsRoutes(route{name: name, id: filepath.Base(dir), farm: true, feature: v.feature, args: f.args, admin: admin,
			addr: fmt.Sprintf("127.0.0.1:%d", ports[3]), front: s}, cert)
		return routes, waitHTTPS(ctx, routes[0], s, o.workloads[0].files[0].path)
	}
	return []*route{{name: v.name(), id: filepath.Base(dir), proto: protoHTTP, farm: true, feature: v.feature, args: f.args, admin: admin, url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), front: s}}, nil
}

// farmFrontend is the farm's rendered frontend with the settings applied,
// on this host's ports.
func farmFrontend(farm model.Farm, pool model.Pool, settings []setting, layout benchkit.PoolLayout, ports localenvoy.Ports, configPath string) (*frontend, error) {
	routing, err := envoy.FarmRouting(farm, map[string]model.Pool{pool.Name: pool}, farmBackends(layout.HTTPPort))
	if err != nil {
		return nil, err
	}
	b, err := envoy.StaticBootstrap(farm, routing)
	if err != nil {
		return nil, err
	}
	if err := localenvoy.Localize(b, ports); err != nil {
		return nil, err
	}
	args, err := renderedEnvoyArgs(farm, configPath)
	if err != nil {
		return nil, err
	}
	f := &frontend{bootstrap: b, args: args}
	if err := applySettings(f, settings); err != nil {
		return nil, err
	}
	if f.upstreamH2 {
		for _, c := range poolClusters(b) {
			for _, e := range c.LoadAssignment.Endpoints[0].LbEndpoints {
				e.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: uint32(layout.H2Port)}
			}
		}
	}
	return f, nil
}

// renderedEnvoyArgs are the arguments the operator's frontend Deployment
// gives Envoy (k8s.Frontend), with the bootstrap's path on this host and a
// fixed node name for the pod's.
func renderedEnvoyArgs(farm model.Farm, configPath string) ([]string, error) {
	d := k8s.Frontend(farm, nil).Deployment
	containers := d.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		return nil, fmt.Errorf("the rendered frontend has %d containers, want 1", len(containers))
	}
	args := slices.Clone(containers[0].Args)
	for i := range args {
		switch {
		case i > 0 && args[i-1] == "--config-path":
			args[i] = configPath
		case strings.Contains(args[i], "$(POD_NAME)"):
			args[i] = strings.ReplaceAll(args[i], "$(POD_NAME)", "bench-frontend")
		}
	}
	return args, nil
}

// variant is a farm path's bench-side tuning.
type variant struct {
	settings []setting
	added    int    // in a run of steps: the settings it adds to the step before (the last ones)
	feature  string // in a run of features: the feature it goes without
}

// name names a farm path by its settings; a tuning step by those it adds.
func (v variant) name() string {
	if len(v.settings) == 0 {
		return "farm: Envoy -> nginx, as rendered"
	}
	shown, prefix := v.settings, "farm, tuned: "
	if v.added > 0 {
		shown, prefix = v.settings[len(v.settings)-v.added:], "farm, + "
	}
	names := make([]string, len(shown))
	for i, s := range shown {
		names[i] = s.String()
	}
	return prefix + strings.Join(names, ", ")
}

// verify fetches every file of every workload through every route, over
// the route's protocol.
func verify(ctx context.Context, routes []*route, ws []workload) error {
	plain := &http.Client{Timeout: 5 * time.Second}
	for _, r := range routes {
		c := plain
		if r.client != nil {
			c = r.client
		}
		for _, w := range ws {
			for _, f := range w.files {
				if _, err := benchkit.Get(ctx, c, r.url+f.path, siteHost, nil, content(f)); err != nil {
					return fmt.Errorf("%s: %w", r.name, err)
				}
			}
		}
	}
	return nil
}

// measure runs the client once against a route and takes the CPU time that
// the proxy hop, the pool worker and the client spent meanwhile, and what
// everything else on the machine used.
func measure(ctx context.Context, c client, r *route, pool *benchkit.Server, in loadInput) (sample, error) {
	frontBefore, poolBefore, err := cpuOf(r.front, pool)
	if err != nil {
		return sample{}, err
	}
	busyBefore, err := benchkit.MachineBusy()
	if err != nil {
		return sample{}, err
	}
	start := time.Now()
	res, clientCPU, err := c.run(ctx, r, in, c.duration)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", r.name, err)
	}
	wall := time.Since(start)
	busyAfter, err := benchkit.MachineBusy()
	if err != nil {
		return sample{}, err
	}
	frontAfter, poolAfter, err := cpuOf(r.front, pool)
	if err != nil {
		return sample{}, err
	}
	if err := pool.Exited(); err != nil {
		return sample{}, err
	}
	if r.front != nil {
		if err := r.front.Exited(); err != nil {
			return sample{}, err
		}
	}
	front, poolCPU := frontAfter-frontBefore, poolAfter-poolBefore
	others := busyAfter - busyBefore - front - poolCPU - clientCPU
	n := time.Duration(res.requests)
	return sample{
		requestsPerSecond: res.requestsPerSecond,
		p50:               res.p50,
		p99:               res.p99,
		frontCPU:          front / n,
		poolCPU:           poolCPU / n,
		clientCPU:         clientCPU / n,
		otherCores:        max(0, others.Seconds()/wall.Seconds()),
	}, nil
}

func cpuOf(front, pool *benchkit.Server) (frontCPU, poolCPU time.Duration, err error) {
	if front != nil {
		if frontCPU, err = front.CPUTime(); err != nil {
			return 0, 0, err
		}
	}
	poolCPU, err = pool.CPUTime()
	return frontCPU, poolCPU, err
}
