package localpool

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"golang.org/x/net/websocket"
)

// App is a Go application on a loopback port, standing in for a pool's app
// container: "/" answers its name (also in the X-Worker header), and "/ws"
// is a WebSocket that answers each text message with "name: message".
type App struct {
	Name string
	Port int32
	// Connections counts the connections the app accepted.
	Connections *atomic.Int64
}

// StartApp runs the application until the test ends.
func StartApp(t *testing.T, name string) App {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Worker", name)
		_, _ = w.Write([]byte(name + "\n"))
	})
	mux.Handle("/ws", websocket.Handler(func(ws *websocket.Conn) {
		for {
			var msg string
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return
			}
			if err := websocket.Message.Send(ws, name+": "+msg); err != nil {
				return
			}
		}
	}))
	conns := &atomic.Int64{}
	srv := &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("app %s: %v", name, err)
		}
	}()
	// Close leaves the WebSockets it handed over: they end with their peer.
	t.Cleanup(func() { _ = srv.Close() })
	return App{Name: name, Port: int32(l.Addr().(*net.TCPAddr).Port), Connections: conns}
}
