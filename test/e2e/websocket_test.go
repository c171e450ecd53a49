//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"webfarm.dev/operator/test/e2e/framework"
)

// websocketFarm: the test application's pool behind a farm with cookie
// affinity, a route to the pool and a route through a cache tier, and short
// timeouts: requests 2 s, idle WebSockets 5 s.
var websocketFarm = testAppPool("chat", 2) + `apiVersion: webfarm.dev/v1alpha1
kind: CachePolicy
metadata: {name: pages}
spec:
  replicas: 1
  cpu: 100m
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: sockets}
spec:
  sites:
  - name: main
    hosts: [chat.example]
    routes:
    - {pathPrefix: /, appPool: chat}
    - {pathPrefix: /cached, appPool: chat, cachePolicy: pages}
  frontend:
    replicas: 1
    cpu: 100m
    requestTimeout: 2s
    webSocketIdleTimeout: 5s
  sessionAffinity:
    type: Cookie
    cookie: {name: CHAT}
`

// WebSockets from outside the cluster through the farm's frontend, the
// pool's nginx and the test application, which answers each message with
// its pod's name.
func TestWebSockets(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, websocketFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/sockets", "apppool/chat", "cachepolicy/pages")
	front := strings.TrimPrefix(cluster.ServiceURL(t, ns, "sockets-frontend"), "http://")

	dial := func(path, cookie string) (*websocket.Conn, error) {
		config, err := websocket.NewConfig("ws://chat.example"+path, "http://chat.example/")
		if err != nil {
			return nil, err
		}
		if cookie != "" {
			config.Header = http.Header{"Cookie": {cookie}}
		}
		conn, err := net.DialTimeout("tcp", front, 5*time.Second)
		if err != nil {
			return nil, err
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		ws, err := websocket.NewClient(config, conn)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("upgrade of %s: %w", path, err)
		}
		_ = conn.SetDeadline(time.Time{})
		return ws, nil
	}
	// echo returns the pod that answered msg.
	echo := func(ws *websocket.Conn, msg string) (string, error) {
		_ = ws.SetDeadline(time.Now().Add(10 * time.Second))
		defer func() { _ = ws.SetDeadline(time.Time{}) }()
		if err := websocket.Message.Send(ws, msg); err != nil {
			return "", err
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil {
			return "", err
		}
		pod, rest, ok := strings.Cut(got, ": ")
		if !ok || rest != msg {
			return "", fmt.Errorf("the echo of %q is %q", msg, got)
		}
		return pod, nil
	}
	// closedWithin waits for the frontend to close ws, at most limit.
	closedWithin := func(ws *websocket.Conn, limit time.Duration) (time.Duration, error) {
		start := time.Now()
		_ = ws.SetReadDeadline(start.Add(limit))
		var msg string
		err := websocket.Message.Receive(ws, &msg)
		var timeout net.Error
		if err == nil || (errors.As(err, &timeout) && timeout.Timeout()) {
			return 0, fmt.Errorf("still open after %s (%q, %v)", time.Since(start).Round(time.Millisecond), msg, err)
		}
		return time.Since(start), nil
	}
	var ws *websocket.Conn
	framework.Eventually(t, time.Minute, func() error {
		var err error
		ws, err = dial("/ws", "")
		return err
	})
	ws.Close()

	t.Run("a WebSocket echoes on a route to the pool and on a route through a cache tier", func(t *testing.T) {
		for _, path := range []string{"/ws", "/cached/ws"} {
			ws, err := dial(path, "")
			if err != nil {
				t.Fatal(err)
			}
			pod, err := echo(ws, "hello "+path)
			ws.Close()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if !strings.HasPrefix(pod, "chat-pool-") {
				t.Errorf("%s: answered by %q, want a worker of pool chat", path, pod)
			}
		}
	})

	t.Run("an open WebSocket outlives the request timeout while it carries messages, and is closed after 5 s idle", func(t *testing.T) {
		ws, err := dial("/ws", "")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		start := time.Now()
		pace := time.NewTicker(3 * time.Second) // the pace of the conversation: longer than the request timeout
		defer pace.Stop()
		for i := range 4 {
			if i > 0 {
				<-pace.C
			}
			if _, err := echo(ws, fmt.Sprintf("tick %d", i)); err != nil {
				t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
			}
		}
		idle, err := closedWithin(ws, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("open %s over 4 messages, then closed after %s idle", time.Since(start).Round(time.Millisecond)-idle, idle.Round(time.Millisecond))
		if idle < 4*time.Second || idle > 10*time.Second {
			t.Errorf("closed after %s idle, want about the idle timeout of 5 s", idle.Round(time.Millisecond))
		}
	})

	t.Run("with cookie affinity a WebSocket reaches the worker of its page", func(t *testing.T) {
		pods := map[string]bool{}
		for i := range 6 {
			r, err := framework.HTTPGet("http://"+front+"/", "Host: chat.example")
			if err != nil {
				t.Fatal(err)
			}
			var cookie string
			for _, c := range (&http.Response{Header: r.Header}).Cookies() {
				if c.Name == "CHAT.chat" {
					cookie = c.Name + "=" + c.Value
				}
			}
			page := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(r.Body, ":", 2)[0], "app on "))
			if cookie == "" || page == "" {
				t.Fatalf("page %d: cookie %q, body %q", i, cookie, r.Body)
			}
			pods[page] = true
			ws, err := dial("/ws", cookie)
			if err != nil {
				t.Fatal(err)
			}
			pod, err := echo(ws, "hi")
			ws.Close()
			if err != nil {
				t.Fatal(err)
			}
			if pod != page {
				t.Fatalf("page %d came from %s, its WebSocket reached %s", i, page, pod)
			}
		}
		t.Logf("pages and their WebSockets on %d workers", len(pods))
	})

	t.Run("an open WebSocket carries on with its worker across a scale-out from 2 to 3", func(t *testing.T) {
		ws, err := dial("/ws", "")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		pod, err := echo(ws, "before")
		if err != nil {
			t.Fatal(err)
		}
		cluster.Run(t, "patch", "apppool", "chat", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":3}}`)
		scaled := time.Now()
		messages := 0
		// Each poll is a message too: the conversation goes on while the
		// new worker starts and joins the frontend's endpoints.
		framework.Eventually(t, 2*time.Minute, func() error {
			if got, err := echo(ws, fmt.Sprintf("during %d", messages)); err != nil || got != pod {
				t.Fatalf("%s after the scale-out the WebSocket on %s got an answer from %q (%v)", time.Since(scaled).Round(time.Millisecond), pod, got, err)
			}
			messages++
			ready := cluster.Run(t, "get", "apppool", "chat", "-n", ns, "-o", "jsonpath={.status.readyReplicas}")
			if ready != "3" {
				return fmt.Errorf("%s of 3 workers ready", ready)
			}
			return nil
		})
		if got, err := echo(ws, "after"); err != nil || got != pod {
			t.Fatalf("after the scale-out the WebSocket on %s got an answer from %q (%v)", pod, got, err)
		}
		t.Logf("one WebSocket on %s carried %d messages over the %s the pool took to scale out", pod, messages+2, time.Since(scaled).Round(time.Millisecond))
		ws.Close() // a WebSocket left open would hold a leaving worker for the whole drain
		cluster.Run(t, "patch", "apppool", "chat", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":2}}`)
		framework.Eventually(t, 2*time.Minute, func() error {
			if n := len(podNames(t, ns, "app.kubernetes.io/instance=chat,app.kubernetes.io/component=pool")); n != 2 {
				return fmt.Errorf("%d worker pods, want 2 before the scale-in test", n)
			}
			return nil
		})
	})

	t.Run("on scale-in a WebSocket to the leaving worker carries messages during the drain, then is closed", func(t *testing.T) {
		// A WebSocket on each worker.
		open := map[string]*websocket.Conn{}
		framework.Eventually(t, time.Minute, func() error {
			ws, err := dial("/ws", "")
			if err != nil {
				return err
			}
			pod, err := echo(ws, "which")
			if err != nil || open[pod] != nil {
				ws.Close()
				return fmt.Errorf("WebSockets on %d workers (%v)", len(open), err)
			}
			open[pod] = ws
			if len(open) < 2 {
				return fmt.Errorf("WebSockets on %d workers", len(open))
			}
			return nil
		})
		for _, ws := range open {
			defer ws.Close()
		}
		cluster.Run(t, "patch", "apppool", "chat", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":1}}`)
		scaled := time.Now()
		var leaving string
		framework.Eventually(t, time.Minute, func() error {
			out := cluster.Run(t, "get", "pods", "-n", ns, "-o", `jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}{"\n"}{end}`)
			leaving = strings.TrimSpace(out)
			if open[leaving] == nil {
				return fmt.Errorf("terminating pods %q, want one of %v", leaving, open)
			}
			return nil
		})
		if _, err := echo(open[leaving], "during the drain"); err != nil {
			t.Fatalf("the WebSocket to the leaving worker did not answer %s after the scale-in: %v", time.Since(scaled).Round(time.Millisecond), err)
		}
		// The staying worker's WebSocket is untouched (asked now: left
		// quiet through the drain, the farm's 5 s idle timeout would close it).
		for pod, ws := range open {
			if pod == leaving {
				continue
			}
			if _, err := echo(ws, "still here"); err != nil {
				t.Errorf("the WebSocket to the staying worker %s: %v", pod, err)
			}
		}
		if _, err := closedWithin(open[leaving], 40*time.Second); err != nil {
			t.Fatal(err)
		}
		lived := time.Since(scaled)
		t.Logf("the WebSocket to the leaving worker %s was closed %s after the scale-in", leaving, lived.Round(time.Millisecond))
		if lived < 5*time.Second {
			t.Errorf("closed %s after the scale-in, before the 5 s drain pause", lived.Round(time.Millisecond))
		}
		// The client reconnects to the worker that stays.
		ws, err := dial("/ws", "")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if pod, err := echo(ws, "again"); err != nil || pod == leaving {
			t.Errorf("the reconnected WebSocket reached %q (%v), want the staying worker", pod, err)
		}
	})
}
