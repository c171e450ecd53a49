package envoy_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// echoWorker answers with the request headers a pool would see and its name.
func echoWorker(t *testing.T, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Worker", name)
			for _, h := range []string{envoy.RealIPHeader, "X-Forwarded-For", "X-Forwarded-Proto"} {
				w.Header().Set("Seen-"+h, r.Header.Get(h))
			}
		})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().(*net.TCPAddr).Port
}

// clientFarm is one site, www.example, on pool web with these workers.
func clientFarm(t *testing.T, address v1.ClientAddress, affinity v1.AffinityType, workers ...string) *localenvoy.Frontend {
	t.Helper()
	var ports []int
	for _, w := range workers {
		ports = append(ports, echoWorker(t, w))
	}
	return frontendFor(t, &v1.WebFarm{Spec: v1.WebFarmSpec{
		Sites:           []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{AppPool: "web"}}}},
		Frontend:        v1.Frontend{ClientAddress: address},
		SessionAffinity: v1.SessionAffinity{Type: affinity},
	}}, map[string][]int{"web": ports})
}

func TestTheClientAddressIsWhatTheTrustedProxiesSay(t *testing.T) {
	tests := []struct {
		name      string
		address   v1.ClientAddress
		forwarded string // X-Forwarded-For the request arrives with
		proto     string // X-Forwarded-Proto the request arrives with
		client    string // the X-Real-IP the pool must see
		xff       string // the X-Forwarded-For the pool must see, less the address the frontend appends
		xfp       string // the X-Forwarded-Proto the pool must see
	}{
		{"with no proxy trusted a client's own X-Forwarded-For is kept but not believed", v1.ClientAddress{},
			"203.0.113.9", "https", "127.0.0.1", "203.0.113.9", "http"},
		{"behind one trusted hop the load balancer's entry is the client", v1.ClientAddress{TrustedHops: 1},
			"203.0.113.9", "https", "203.0.113.9", "203.0.113.9", "https"},
		{"behind one trusted hop an entry the client forged in front is ignored", v1.ClientAddress{TrustedHops: 1},
			"10.9.9.9, 203.0.113.9", "https", "203.0.113.9", "10.9.9.9, 203.0.113.9", "https"},
		{"from a trusted network the first entry outside the trusted networks is the client",
			v1.ClientAddress{TrustedNetworks: []v1.CIDR{"127.0.0.0/8", "10.0.0.0/8"}},
			"198.51.100.7, 10.1.2.3", "https", "198.51.100.7", "198.51.100.7, 10.1.2.3", "https"},
		{"a request from outside the trusted networks keeps its connecting address",
			v1.ClientAddress{TrustedNetworks: []v1.CIDR{"10.0.0.0/8"}},
			"198.51.100.7", "https", "127.0.0.1", "198.51.100.7", "http"},
		{"a request with no X-Forwarded-For is its connecting address", v1.ClientAddress{TrustedHops: 1},
			"", "", "127.0.0.1", "", "http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := clientFarm(t, tt.address, v1.AffinityNone, "w1")
			var headers []string
			if tt.forwarded != "" {
				headers = append(headers, "X-Forwarded-For", tt.forwarded)
			}
			if tt.proto != "" {
				headers = append(headers, "X-Forwarded-Proto", tt.proto)
			}
			// A client cannot choose the address the pool sees.
			headers = append(headers, envoy.RealIPHeader, "192.0.2.66")
			h, _ := get(t, fe.URL+"/", "www.example", headers...)
			if got := h.Get("Seen-" + envoy.RealIPHeader); got != tt.client {
				t.Errorf("the pool saw client %q, want %q", got, tt.client)
			}
			// The frontend appends the address the request came from (Envoy
			// writes its own for a loopback peer, as here).
			got := h.Get("Seen-X-Forwarded-For")
			i := strings.LastIndex(got, ",")
			if appended := i >= 0 && got[:i] == tt.xff || i < 0 && tt.xff == "" && got != ""; !appended {
				t.Errorf("the pool saw X-Forwarded-For %q, want %q and the address the frontend appended", got, tt.xff)
			}
			if got := h.Get("Seen-X-Forwarded-Proto"); got != tt.xfp {
				t.Errorf("the pool saw X-Forwarded-Proto %q, want %q", got, tt.xfp)
			}
			lines := accessLog(t, fe)
			if got, _ := lines[len(lines)-1]["clientAddress"].(string); !strings.HasPrefix(got, tt.client) {
				t.Errorf("the access log's clientAddress is %q, want %s", got, tt.client)
			}
		})
	}
}

// proxyV2Header is a PROXY protocol version 2 header for a TCP over IPv4
// connection from src to dst.
func proxyV2Header(src, dst netip4, srcPort, dstPort uint16) []byte {
	h := []byte("\r\n\r\n\x00\r\nQUIT\n")
	h = append(h, 0x21, 0x11) // version 2, PROXY; AF_INET, STREAM
	h = binary.BigEndian.AppendUint16(h, 12)
	h = append(h, src[:]...)
	h = append(h, dst[:]...)
	h = binary.BigEndian.AppendUint16(h, srcPort)
	return binary.BigEndian.AppendUint16(h, dstPort)
}

type netip4 [4]byte

// rawGet sends preamble and then a GET on a new connection, and returns the
// response's headers (nil when the frontend closed the connection without
// an answer).
func rawGet(t *testing.T, frontendURL string, preamble []byte) http.Header {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(frontendURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := append(append([]byte{}, preamble...), "GET / HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n"...)
	if _, err := conn.Write(req); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Header
}

func TestThePROXYProtocolGivesTheClientsAddress(t *testing.T) {
	url := clientFarm(t, v1.ClientAddress{ProxyProtocol: ptr.To(true)}, v1.AffinityNone, "w1").URL
	_, port, _ := strings.Cut(strings.TrimPrefix(url, "http://"), ":")
	tests := []struct {
		name     string
		preamble []byte
		client   string // "" when the connection must get no answer
	}{
		{"a version 1 header names the client", []byte("PROXY TCP4 192.0.2.10 127.0.0.1 40000 " + port + "\r\n"), "192.0.2.10"},
		{"a version 2 header names the client", proxyV2Header(netip4{192, 0, 2, 11}, netip4{127, 0, 0, 1}, 40001, mustPort(t, port)), "192.0.2.11"},
		{"a connection without the header gets no answer", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := rawGet(t, url, tt.preamble)
			switch {
			case tt.client == "" && answer != nil:
				t.Fatalf("a connection without a PROXY header was answered: %v", answer)
			case tt.client == "":
			case answer == nil:
				t.Fatal("no answer")
			case answer.Get("Seen-"+envoy.RealIPHeader) != tt.client:
				t.Errorf("the pool saw client %q, want %q", answer.Get("Seen-"+envoy.RealIPHeader), tt.client)
			}
		})
	}
}

func mustPort(t *testing.T, s string) uint16 {
	t.Helper()
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(p)
}

// Behind a load balancer every connection comes from it: ClientIP and
// ClassC affinity must hash the client it names, not the balancer.
func TestAffinityBehindALoadBalancerFollowsTheRealClient(t *testing.T) {
	tests := []struct {
		name     string
		affinity v1.AffinityType
		client   func(i int) string
		// spread: clients must reach more than one worker; otherwise all
		// must reach one.
		spread bool
	}{
		{"ClientIP keeps each client on its worker and spreads the clients", v1.AffinityClientIP,
			func(i int) string { return fmt.Sprintf("198.51.%d.%d", i, 10+i) }, true},
		{"ClassC keeps a /24 network's clients on one worker", v1.AffinityClassC,
			func(i int) string { return fmt.Sprintf("203.0.113.%d", 1+i) }, false},
		{"ClassC spreads clients of different networks", v1.AffinityClassC,
			func(i int) string { return fmt.Sprintf("198.51.%d.7", i) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := clientFarm(t, v1.ClientAddress{TrustedHops: 1}, tt.affinity, "w1", "w2", "w3").URL
			used := map[string]bool{}
			for i := range 24 {
				var first string
				for range 3 {
					h, _ := get(t, url+"/", "www.example", "X-Forwarded-For", tt.client(i))
					w := h.Get("X-Worker")
					if first == "" {
						first = w
					} else if w != first {
						t.Fatalf("client %s reached %s, then %s", tt.client(i), first, w)
					}
				}
				used[first] = true
			}
			if tt.spread != (len(used) > 1) {
				t.Errorf("24 clients reached workers %v; spread %v wanted", used, tt.spread)
			}
		})
	}
}
