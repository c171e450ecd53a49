package testutil

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// ServeOnLoopbackHosts serves each handler on its own loopback address
// (127.0.0.1, 127.0.0.2, ...), all on one port, as the pods of one kind
// serve one port at their own IPs: a collector reads them as it reads pods.
// It returns the port and the addresses, in the handlers' order.
func ServeOnLoopbackHosts(t testing.TB, handlers ...http.Handler) (port int, ips []string) {
	t.Helper()
	for i, h := range handlers {
		ip := "127.0.0." + strconv.Itoa(i+1)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		srv := httptest.NewUnstartedServer(h)
		srv.Listener.Close()
		srv.Listener = l
		srv.Start()
		t.Cleanup(srv.Close)
		ips = append(ips, ip)
	}
	return port, ips
}

// Hang is a handler that never answers: a server that does not answer in
// time. It returns when the client gives up.
var Hang = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
