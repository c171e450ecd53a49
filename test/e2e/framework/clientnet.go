package framework

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ClientNetwork is a network namespace on this machine holding client
// addresses (for example several in one /24 and others in other /24s). Its
// requests reach the cluster the way outside clients' do, routed through the
// host, so a NodePort Service with externalTrafficPolicy Local sees each
// client's own address (requests from the host's own addresses would be
// masqueraded by kube-proxy).
type ClientNetwork struct {
	Name      string
	Addresses []string
}

const (
	clientNetns    = "wf-e2e-clients"
	clientHostLink = "wfe2e0"
	clientNsLink   = "wfe2e1"
	clientGateway  = "10.201.0.1"
	clientRange    = "10.201.0.0/16"
)

// ClientNetwork creates the namespace with the addresses given (in
// 10.201.0.0/16) and removes it when the test ends.
func (c *Cluster) ClientNetwork(t testing.TB, addresses ...string) *ClientNetwork {
	t.Helper()
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	_ = exec.Command("ip", "netns", "del", clientNetns).Run() // left by an interrupted run
	ip("netns", "add", clientNetns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", clientNetns).Run() })
	ip("link", "add", clientHostLink, "type", "veth", "peer", "name", clientNsLink, "netns", clientNetns)
	ip("addr", "add", clientGateway+"/32", "dev", clientHostLink)
	ip("link", "set", clientHostLink, "up")
	ip("route", "add", clientRange, "dev", clientHostLink)
	inNs := func(args ...string) { t.Helper(); ip(append([]string{"-n", clientNetns}, args...)...) }
	inNs("link", "set", "lo", "up")
	for _, a := range addresses {
		inNs("addr", "add", a+"/32", "dev", clientNsLink)
	}
	inNs("link", "set", clientNsLink, "up")
	inNs("route", "add", clientGateway, "dev", clientNsLink)
	inNs("route", "add", "default", "via", clientGateway, "dev", clientNsLink)
	return &ClientNetwork{Name: clientNetns, Addresses: addresses}
}

// Get sends one GET from source (one of the network's addresses) on a new
// connection. Each header is "Name: value"; "Host: x" sets the host.
func (n *ClientNetwork) Get(source, target string, headers ...string) (Response, error) {
	req, err := newGet(target, headers)
	if err != nil {
		return Response{}, err
	}
	req.Close = true
	conn, err := n.dial(source, req.URL.Host)
	if err != nil {
		return Response{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := req.Write(conn); err != nil {
		return Response{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	var body strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body.String()}, err
}

// dial opens a TCP connection from source, inside the namespace.
func (n *ClientNetwork) dial(source, address string) (net.Conn, error) {
	var conn net.Conn
	err := n.within(func() error {
		dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 3 * time.Second}
		var err error
		conn, err = dialer.Dial("tcp", address)
		return err
	})
	if err != nil && conn != nil {
		conn.Close()
		return nil, err
	}
	return conn, err
}

// within runs fn inside the namespace: a socket belongs to the namespace of
// the thread that creates it (and stays there), so fn runs on a locked
// thread switched into the namespace and back.
func (n *ClientNetwork) within(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		switchedBack, err := n.withinLocked(fn)
		done <- err
		// A thread that could not switch back stays locked, so Go retires it.
		if switchedBack {
			runtime.UnlockOSThread()
		}
	}()
	return <-done
}

func (n *ClientNetwork) withinLocked(fn func() error) (switchedBack bool, err error) {
	home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return true, err
	}
	defer home.Close()
	target, err := os.Open("/var/run/netns/" + n.Name)
	if err != nil {
		return true, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("entering %s: %w", n.Name, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		return false, fmt.Errorf("switching back from %s: %w", n.Name, err)
	}
	return true, fnErr
}

// Proxy starts a reverse proxy on address:8080, one of the network's
// addresses, as a cloud load balancer in front of the farm: it forwards each
// request to target (a URL) from its own address and appends the client's
// address to X-Forwarded-For. It stops when the test ends; the result is
// its URL.
func (n *ClientNetwork) Proxy(t testing.TB, address, target string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var listener net.Listener
	if err := n.within(func() error {
		var err error
		listener, err = net.Listen("tcp", net.JoinHostPort(address, "8080"))
		return err
	}); err != nil {
		t.Fatalf("proxy on %s: %v", address, err)
	}
	proxy := httputil.NewSingleHostReverseProxy(to) // keeps the client's Host, appends to X-Forwarded-For
	proxy.Transport = &http.Transport{
		DialContext:         func(_ context.Context, _, addr string) (net.Conn, error) { return n.dial(address, addr) },
		MaxIdleConnsPerHost: 16,
	}
	server := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	return "http://" + listener.Addr().String()
}
