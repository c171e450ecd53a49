package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Client is a pod with curl, wrk and hey (localhost/webfarm-client) that
// sends requests from inside the cluster: through cluster DNS, Services and
// the pod network, as the farm's real clients and neighbours do.
type Client struct {
	c         *Cluster
	Namespace string
	Name      string
}

// ClientPod starts a client pod in the namespace (restricted profile) and
// waits until it runs.
func (c *Cluster) ClientPod(t testing.TB, namespace string) *Client {
	t.Helper()
	return c.ClientPodLabelled(t, namespace, "client", map[string]string{"app.kubernetes.io/name": "webfarm-e2e-client"})
}

// ClientPodLabelled is ClientPod with the pod's name and labels given: a
// neighbour that passes itself off as another pod by its labels.
func (c *Cluster) ClientPodLabelled(t testing.TB, namespace, name string, labels map[string]string) *Client {
	t.Helper()
	cl := &Client{c: c, Namespace: namespace, Name: name}
	labelsJSON, err := json.Marshal(labels)
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(t, namespace, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: %s
spec:
  terminationGracePeriodSeconds: 0
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: client
    image: localhost/webfarm-client:dev
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    resources:
      requests: {cpu: 10m, memory: 16Mi}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
`, cl.Name, labelsJSON))
	c.Run(t, "wait", "-n", namespace, "--for=condition=Ready", "pod/"+cl.Name, "--timeout=90s")
	return cl
}

// Exec runs a command in the client pod and returns its output.
func (cl *Client) Exec(ctx context.Context, command ...string) (string, error) {
	args := append([]string{"exec", "-n", cl.Namespace, cl.Name, "--"}, command...)
	return cl.c.Kubectl.Run(ctx, args...)
}

// Get sends one GET with curl from the client pod and returns the status
// code and body. Each header is "Name: value".
func (cl *Client) Get(url string, headers ...string) (status int, body string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := []string{"curl", "-sS", "--max-time", "5", "-w", "\n%{http_code}"}
	for _, h := range headers {
		cmd = append(cmd, "-H", h)
	}
	out, err := cl.Exec(ctx, append(cmd, url)...)
	if err != nil {
		return 0, out, err
	}
	i := strings.LastIndex(out, "\n")
	if _, err := fmt.Sscan(out[i+1:], &status); err != nil {
		return 0, out, fmt.Errorf("curl printed no status code: %q", out)
	}
	return status, out[:i], nil
}
