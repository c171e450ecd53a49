package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// frontendURL is where the farm's listener serves: the operator renders it
// on the pod's port, on every address.
var frontendURL = "http://127.0.0.1:" + strconv.Itoa(envoy.HTTPPort)

// reloadStats are the Unix times (ms) at which Envoy last applied the farm's
// route configuration and, since its virtual hosts come one by one (VHDS),
// the last of them.
var reloadStats = []string{
	"http.farm.rds." + envoy.RouteConfigName + ".config_reload_time_ms",
	"http.farm.rds.vhds." + envoy.RouteConfigName + ".update_time",
}

// frontend is the real Envoy, bootstrapped as the operator renders a farm's
// frontend, connected to the manager's xDS server.
type frontend struct {
	*benchkit.Server
	adminURL string
}

// startFrontend runs envoyBin with the farm's bootstrap: its admin and status
// listeners on free loopback ports, its xDS server the manager's.
func startFrontend(envoyBin, dir, xdsAddr string, workers int) (*frontend, error) {
	host, port, err := splitHostPort(xdsAddr)
	if err != nil {
		return nil, err
	}
	f := model.Farm{Namespace: infraNS, Name: farmName, Platform: model.Platform{XDSHost: host, XDSPort: int32(port)}}
	doc, err := envoy.Bootstrap(f)
	if err != nil {
		return nil, err
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(doc, &b); err != nil {
		return nil, err
	}
	var xds *clusterv3.Cluster
	for _, c := range b.StaticResources.Clusters {
		if c.GetType() == clusterv3.Cluster_STRICT_DNS && c.Name != envoy.ActivatorCluster {
			xds = c
		}
	}
	if xds == nil {
		return nil, fmt.Errorf("the rendered bootstrap has no xDS cluster")
	}
	free, err := benchkit.FreePorts(4)
	if err != nil {
		return nil, err
	}
	ports := localenvoy.Ports{HTTP: free[0], HTTPS: free[1], Status: free[2], Admin: free[3]}
	// Localize moves the listeners and drops the xDS cluster (its frontends
	// are static); this one is dynamic, so the cluster goes back.
	if err := localenvoy.Localize(&b, ports); err != nil {
		return nil, err
	}
	b.StaticResources.Clusters = append(b.StaticResources.Clusters, xds)
	out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(&b)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "envoy.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return nil, err
	}
	args := append([]string{envoyBin, "-c", path, "-l", "warning", "--use-dynamic-base-id", "--concurrency", strconv.Itoa(workers)},
		envoy.NodeIDArgs("bench-frontend")...)
	s, err := benchkit.StartServer("envoy", filepath.Join(dir, "envoy.log"), "", args...)
	if err != nil {
		return nil, err
	}
	fe := &frontend{Server: s, adminURL: "http://127.0.0.1:" + strconv.Itoa(ports.Admin)}
	ready := fmt.Sprintf("http://127.0.0.1:%d%s", ports.Status, vocabulary.FrontendReadyPath)
	if err := benchkit.WaitReady(context.Background(), s, ready, "", time.Minute); err != nil {
		s.Stop()
		return nil, err
	}
	return fe, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, ok := strings.Cut(addr, ":")
	port, err := strconv.Atoi(p)
	if !ok || err != nil {
		return "", 0, fmt.Errorf("bad address %q", addr)
	}
	return host, port, nil
}

// admin reads a path of Envoy's admin interface.
func (fe *frontend) admin(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fe.adminURL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("envoy admin %s: %s", path, resp.Status)
	}
	return body, err
}

// stat reads one of Envoy's counters or gauges.
func (fe *frontend) stat(ctx context.Context, name string) (int64, error) {
	body, err := fe.admin(ctx, "/stats?filter=^"+strings.ReplaceAll(name, ".", `\.`)+"$")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("envoy has no stat %s", name)
}

// lastReload is when Envoy last applied the farm's routes or one of its
// virtual hosts (zero: never).
func (fe *frontend) lastReload(ctx context.Context) (time.Time, error) {
	var last int64
	for _, name := range reloadStats {
		ms, err := fe.stat(ctx, name)
		if err != nil {
			return time.Time{}, err
		}
		last = max(last, ms)
	}
	if last == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(last), nil
}
