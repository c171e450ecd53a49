package nginx_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localpool"
)

// A pool worker's real nginx, as rendered, in front of a Go app.
func TestAPoolWorkerPassesWebSocketsToItsAppAndKeepsOtherRequestsOnKeptAliveConnections(t *testing.T) {
	app := localpool.StartApp(t, "app")
	p := basePool()
	p.Content = model.Content{}
	p.App = &model.App{Image: "registry.example.com/chat:1", Port: app.Port}
	worker := localpool.Start(t, p)
	before := app.Connections.Load()

	t.Run("plain requests share one upstream connection", func(t *testing.T) {
		for range 5 {
			resp, err := http.Get(worker.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		// The worker's readiness check may have opened the connection already.
		if n := app.Connections.Load() - before; n > 1 {
			t.Errorf("five requests opened %d connections to the app, want them on one kept alive", n)
		}
	})
	t.Run("a WebSocket reaches the app and echoes", func(t *testing.T) {
		ws, err := websocket.Dial(strings.Replace(worker.URL, "http://", "ws://", 1)+"ws", "", "http://www.example/")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		_ = ws.SetDeadline(time.Now().Add(10 * time.Second))
		for _, msg := range []string{"hello", strings.Repeat("x", 70000)} {
			if err := websocket.Message.Send(ws, msg); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := websocket.Message.Receive(ws, &got); err != nil {
				t.Fatal(err)
			}
			if got != "app: "+msg {
				t.Fatalf("echo %.40q..., want %.40q...", got, "app: "+msg)
			}
		}
	})
}

// A worker that quits (its pod's drain pause is over) takes no new
// connections but keeps an open WebSocket for nginx.ShutdownTimeout (5 s
// with a 15 s shutdown time limit), then closes it.
func TestAQuittingWorkerKeepsAnOpenWebSocketForItsShutdownTimeout(t *testing.T) {
	t.Parallel() // it waits for the shutdown timeout
	app := localpool.StartApp(t, "app")
	p := basePool()
	p.App = &model.App{Image: "registry.example.com/chat:1", Port: app.Port}
	p.Health.ShutdownTimeLimit = 15 * time.Second
	shutdown := nginx.ShutdownTimeout(p)
	worker := localpool.Start(t, p)
	ws, err := websocket.Dial(strings.Replace(worker.URL, "http://", "ws://", 1)+"ws", "", "http://www.example/")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	echo := func(msg string) error {
		_ = ws.SetDeadline(time.Now().Add(5 * time.Second))
		if err := websocket.Message.Send(ws, msg); err != nil {
			return err
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil {
			return err
		}
		if got != "app: "+msg {
			t.Errorf("echo %q", got)
		}
		return nil
	}
	if err := echo("before"); err != nil {
		t.Fatal(err)
	}
	if err := worker.Quit(); err != nil {
		t.Fatal(err)
	}
	quit := time.Now()
	testutil.Eventually(t, 10*time.Second, func() error {
		if resp, err := http.Get(worker.URL); err == nil {
			resp.Body.Close()
			return fmt.Errorf("the quitting worker still takes new requests")
		}
		return nil
	})
	if err := echo("while quitting"); err != nil {
		t.Fatalf("the open WebSocket did not answer just after the worker began to quit: %v", err)
	}
	// Then it is closed: a read ends with the connection, not the deadline.
	_ = ws.SetReadDeadline(quit.Add(shutdown + 10*time.Second))
	var msg string
	err = websocket.Message.Receive(ws, &msg)
	open := time.Since(quit)
	var timeout net.Error
	if err == nil || (errors.As(err, &timeout) && timeout.Timeout()) {
		t.Fatalf("the WebSocket is still open %s after the worker began to quit (%q, %v)", open.Round(time.Millisecond), msg, err)
	}
	t.Logf("the quitting worker closed the open WebSocket after %s (%v)", open.Round(time.Millisecond), err)
	if open < shutdown-time.Second || open > shutdown+3*time.Second {
		t.Errorf("closed %s after the worker began to quit, want about %s", open.Round(time.Millisecond), shutdown)
	}
}
