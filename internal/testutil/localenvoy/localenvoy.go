// Package localenvoy runs a farm's frontend as the operator renders it, on
// loopback: the real Envoy with the farm's routing delivered statically
// (envoy.StaticBootstrap), for tests and benchmarks of the data path.
package localenvoy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// Ports are a frontend's ports on this host: the farm's traffic, the status
// listener (ready, metrics) and the admin interface.
type Ports struct {
	HTTP, HTTPS, Status, Admin int
}

// Localize moves the frontend's listeners and admin interface from the pod's
// ports to loopback ports and drops the xDS cluster, which a static
// bootstrap does not use, and the activator's unless its host is 127.0.0.1.
func Localize(b *bootstrapv3.Bootstrap, p Ports) error {
	ports := map[uint32]int{envoy.HTTPPort: p.HTTP, envoy.HTTPSPort: p.HTTPS, vocabulary.FrontendStatusPort: p.Status, envoy.AdminPort: p.Admin}
	move := func(a *corev3.Address) error {
		sa := a.GetSocketAddress()
		port, ok := ports[sa.GetPortValue()]
		if !ok {
			// Two frontends on one host would collide on it.
			return fmt.Errorf("the rendered bootstrap listens on port %d, which Localize does not move", sa.GetPortValue())
		}
		sa.Address = "127.0.0.1"
		sa.PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: uint32(port)}
		return nil
	}
	if err := move(b.Admin.Address); err != nil {
		return err
	}
	for _, l := range b.StaticResources.Listeners {
		if err := move(l.Address); err != nil {
			return err
		}
	}
	var clusters []*clusterv3.Cluster
	for _, c := range b.StaticResources.Clusters {
		switch {
		case c.LoadAssignment == nil:
			return fmt.Errorf("cluster %s has no endpoints", c.Name)
		case c.GetType() == clusterv3.Cluster_STRICT_DNS && (c.Name != envoy.ActivatorCluster || !onLoopback(c)):
			// The xDS server's cluster (a static bootstrap has no use for
			// it), and the activator's unless a test runs one on loopback:
			// a name to resolve would leave the host.
			continue
		case c.Name == "admin":
			for _, e := range c.LoadAssignment.Endpoints[0].LbEndpoints {
				if err := move(e.GetEndpoint().Address); err != nil {
					return err
				}
			}
		}
		clusters = append(clusters, c)
	}
	b.StaticResources.Clusters = clusters
	return nil
}

// onLoopback: every endpoint of the cluster is on 127.0.0.1.
func onLoopback(c *clusterv3.Cluster) bool {
	for _, l := range c.GetLoadAssignment().GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			if e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress() != "127.0.0.1" {
				return false
			}
		}
	}
	return true
}

// Frontend is a running frontend.
type Frontend struct {
	// URL is the farm's listener; AdminURL the admin interface (stats);
	// HTTPSAddress the HTTPS listener's host:port.
	URL, AdminURL, HTTPSAddress string

	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

// Start runs envoyBin with the farm's routing on free loopback ports and
// waits until it is ready (at most 30 s).
func Start(envoyBin, dir string, f model.Farm, r envoy.Routing) (*Frontend, error) {
	b, err := envoy.StaticBootstrap(f, r)
	if err != nil {
		return nil, err
	}
	free, err := testutil.FreePorts(4)
	if err != nil {
		return nil, err
	}
	ports := Ports{HTTP: free[0], Status: free[1], Admin: free[2], HTTPS: free[3]}
	if err := Localize(b, ports); err != nil {
		return nil, err
	}
	doc, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "envoy.json")
	if err := os.WriteFile(path, []byte(LocalPaths(dir, string(doc))), 0o644); err != nil {
		return nil, err
	}
	if err := WriteCertConfig(dir, f); err != nil {
		return nil, err
	}
	args := append([]string{"-c", path, "-l", "warning", "--use-dynamic-base-id", "--concurrency", "1"}, envoy.NodeIDArgs("local-frontend")...)
	fe := &Frontend{
		URL:          "http://127.0.0.1:" + strconv.Itoa(ports.HTTP),
		HTTPSAddress: "127.0.0.1:" + strconv.Itoa(ports.HTTPS),
		AdminURL:     "http://127.0.0.1:" + strconv.Itoa(ports.Admin),
		cmd:          exec.Command(envoyBin, args...),
		log:          &syncBuffer{},
		done:         make(chan struct{}),
	}
	fe.cmd.Stdout, fe.cmd.Stderr = fe.log, fe.log
	fe.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := fe.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { fe.err = fe.cmd.Wait(); close(fe.done) }()
	ready := fmt.Sprintf("http://127.0.0.1:%d%s", ports.Status, vocabulary.FrontendReadyPath)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-fe.done:
			return nil, fmt.Errorf("envoy exited: %v\n%s", fe.err, fe.log)
		default:
		}
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return fe, nil
			}
		}
		if time.Now().After(deadline) {
			fe.Stop()
			return nil, fmt.Errorf("envoy not ready after 30 s:\n%s", fe.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CertDir is where a test puts a certificate's tls.crt and tls.key (a TLS
// site's, or model.GatewayCertificateName's), as the pod's Secret volume
// would hold them: the frontend of dir reads them there.
func CertDir(dir, cert string) string { return filepath.Join(dir, "certs", cert) }

// LocalPaths moves the pod's config and certificate directories in a
// rendered document (the bootstrap, a SDS file) into dir.
func LocalPaths(dir, doc string) string {
	doc = strings.ReplaceAll(doc, envoy.ConfigDir+"/", filepath.Join(dir, "config")+"/")
	return strings.ReplaceAll(doc, envoy.CertMountDir+"/", filepath.Join(dir, "certs")+"/")
}

// WriteCertConfig writes the SDS files the ConfigMap would hold, and makes
// each certificate's directory, as Kubernetes mounts an optional Secret
// that does not exist: empty.
func WriteCertConfig(dir string, f model.Farm) error {
	files := envoy.SDSFiles(f)
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		return err
	}
	for name, doc := range files {
		if err := os.WriteFile(filepath.Join(dir, "config", name), []byte(LocalPaths(dir, doc)), 0o644); err != nil {
			return err
		}
	}
	for _, c := range f.Certificates() {
		if err := os.MkdirAll(CertDir(dir, c.Name), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Counter reads one of Envoy's counters or gauges from the admin interface.
func (fe *Frontend) Counter(name string) (uint64, error) {
	resp, err := http.Get(fe.AdminURL + "/stats?filter=^" + strings.ReplaceAll(name, ".", `\.`) + "$")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no stat %s:\n%s", name, body)
}

// Log is what Envoy wrote.
func (fe *Frontend) Log() string { return fe.log.String() }

// Stop stops Envoy and waits for it.
func (fe *Frontend) Stop() {
	if err := fe.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = fe.cmd.Process.Kill()
	}
	select {
	case <-fe.done:
	case <-time.After(10 * time.Second):
		_ = fe.cmd.Process.Kill()
		<-fe.done
	}
}

// syncBuffer is a bytes.Buffer that Envoy's stdout and stderr write to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
