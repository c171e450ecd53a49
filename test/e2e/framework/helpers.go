package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/devcluster"
	"webfarm.dev/operator/internal/testutil"
)

// Run runs kubectl and fails the test if it fails.
func (c *Cluster) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.Kubectl.Run(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Apply applies a manifest (YAML, one or more documents) in a namespace.
func (c *Cluster) Apply(t testing.TB, namespace, manifest string) {
	t.Helper()
	if _, err := c.Kubectl.RunWithInput(context.Background(), manifest, "apply", "-n", namespace, "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// ApplyFile applies a file or folder of manifests (kubectl apply -f) in a namespace.
func (c *Cluster) ApplyFile(t testing.TB, namespace, path string) {
	t.Helper()
	c.Run(t, "apply", "-n", namespace, "-f", path)
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace creates a namespace for one test that enforces the restricted Pod
// Security profile. When the test ends, what was in it, its events and the
// operator's log go to the test log if the test failed; then the namespace
// is deleted without waiting for its pods: their drain pauses take about
// 15 s, time the next test uses instead. A test that needs the node's CPU
// free waits for them itself (the full-node test); Stop waits for them when
// the cluster outlives the run.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	base := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	name := "e2e-" + base + "-" + hex.EncodeToString(suffix)
	if err := devcluster.EnsureNamespace(context.Background(), c.Kubectl, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dump(t, name)
		}
		if _, err := c.Kubectl.Run(context.Background(), "delete", "namespace", name, "--ignore-not-found", "--wait=false"); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
		c.leaving.Lock()
		defer c.leaving.Unlock()
		c.leaving.names = append(c.leaving.names, name)
	})
	return name
}

// WaitForNodeFree waits until no pod of an earlier test holds the node's
// CPU: none stopping, none left in a namespace being deleted (the scheduler
// counts their requests until they are gone). For a test that needs the
// node's room, or says no pod of its own waited for any.
func (c *Cluster) WaitForNodeFree(t testing.TB) {
	t.Helper()
	Eventually(t, 3*time.Minute, func() error {
		leaving := strings.Fields(c.Run(t, "get", "namespaces", "-o", `jsonpath={.items[?(@.status.phase=="Terminating")].metadata.name}`))
		pods := c.Run(t, "get", "pods", "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
		for _, line := range strings.Split(strings.TrimSpace(pods), "\n") {
			pod, stopping, _ := strings.Cut(line, " ")
			namespace, _, _ := strings.Cut(pod, "/")
			if stopping != "" || slices.Contains(leaving, namespace) {
				return fmt.Errorf("pod %s of an earlier test is still there", pod)
			}
		}
		return nil
	})
}

// dump logs what a failed test leaves behind.
func (c *Cluster) dump(t testing.TB, namespace string) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"get", "-n", namespace, "web,deployments,replicasets,pods,services,configmaps", "-o", "wide"},
		{"get", "events", "-n", namespace, "--sort-by=.lastTimestamp"},
		// Every operator replica (its restarts show here), and the last lines
		// of each: the leader's among them.
		{"get", "pods", "-n", c.Release.Namespace, "-o", "wide"},
		{"logs", "-n", c.Release.Namespace, "-l", OperatorPods, "--prefix", "--tail=60"},
	} {
		out, err := c.Kubectl.Run(ctx, args...)
		t.Logf("kubectl %s:\n%s%v", strings.Join(args, " "), out, errOrNothing(err))
	}
}

func errOrNothing(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// WaitReady waits until every named webfarm.dev object ("webfarm/contoso")
// reports Ready=True for its current generation.
func (c *Cluster) WaitReady(t testing.TB, namespace string, timeout time.Duration, objects ...string) {
	t.Helper()
	if err := c.Kubectl.WaitReady(context.Background(), namespace, timeout, objects...); err != nil {
		t.Fatal(err)
	}
}

// Eventually polls check until it returns nil, and fails the test with its
// last error when timeout passes (the project's one way for tests to wait).
func Eventually(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, check)
}

// EventuallyEvery polls at a fixed interval, for tests that time what they
// wait for.
func EventuallyEvery(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	if err := devcluster.Poll(context.Background(), timeout, interval, check); err != nil {
		t.Fatal(err)
	}
}

// Pod is the part of a pod the tests look at.
type Pod struct {
	Name, UID, Phase, Ready, IP string
	Deleting                    bool
}

// Pods lists the pods matching a label selector, by name.
func (c *Cluster) Pods(t testing.TB, namespace, selector string) []Pod {
	t.Helper()
	out := c.Run(t, "get", "pods", "-n", namespace, "-l", selector, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var pods []Pod
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		p := Pod{Name: f[0], UID: f[1], Phase: f[2], Ready: f[3]}
		if len(f) > 4 {
			p.IP = f[4]
		}
		p.Deleting = len(f) > 5
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// ServiceURL is http://<cluster IP>:<first port> of a Service; the local
// cluster's Services are reachable from the host.
func (c *Cluster) ServiceURL(t testing.TB, namespace, service string) string {
	t.Helper()
	out := c.Run(t, "get", "service", "-n", namespace, service, "-o", "jsonpath={.spec.clusterIP}:{.spec.ports[0].port}")
	return "http://" + strings.TrimSpace(out)
}

// NodeURL is http://<node address>:<node port> of a NodePort Service: how
// clients outside the cluster reach it.
func (c *Cluster) NodeURL(t testing.TB, namespace, service string) string {
	t.Helper()
	node := c.Run(t, "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`)
	port := c.Run(t, "get", "service", "-n", namespace, service, "-o", "jsonpath={.spec.ports[0].nodePort}")
	return "http://" + strings.TrimSpace(node) + ":" + strings.TrimSpace(port)
}

// Response is what HTTPGet saw.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// newGet builds a GET; each header is "Name: value", and "Host: x" sets the
// request's host (net/http sends req.Host, not a Host header).
func newGet(url string, headers []string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if strings.EqualFold(name, "Host") {
			req.Host = value
			continue
		}
		req.Header.Add(name, value)
	}
	return req, nil
}

// HTTPGet sends one GET from the host (2 s timeout). Each header is "Name: value".
func HTTPGet(url string, headers ...string) (Response, error) {
	req, err := newGet(url, headers)
	if err != nil {
		return Response{}, err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}, err
}

// BytesBeforeClose sends one GET from the host on a new connection and
// reads until the server closes or resets it (at most 2 s): the bytes of an
// answer the client got. An answer still open after 2 s is an error.
func BytesBeforeClose(url string, headers ...string) (int, error) {
	req, err := newGet(url, headers)
	if err != nil {
		return 0, err
	}
	req.Close = true // a whole answer ends the connection too
	conn, err := net.DialTimeout("tcp", req.URL.Host, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if err := req.Write(conn); err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, conn)
	var timeout net.Error
	if errors.As(err, &timeout) && timeout.Timeout() {
		return int(n), fmt.Errorf("the connection is still open after %d bytes", n)
	}
	return int(n), nil // closed: EOF or a reset
}

// ExpectBody polls url from the host until it answers 200 with a body
// containing want.
func ExpectBody(t testing.TB, timeout time.Duration, url, want string, headers ...string) Response {
	t.Helper()
	var last Response
	Eventually(t, timeout, func() error {
		r, err := HTTPGet(url, headers...)
		if err != nil {
			return err
		}
		last = r
		if r.Status != http.StatusOK || !strings.Contains(r.Body, want) {
			return fmt.Errorf("GET %s: %d %q, want 200 with %q", url, r.Status, r.Body, want)
		}
		return nil
	})
	return last
}
