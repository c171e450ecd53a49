package envoy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// These tests are a greedy or slow client's view of a real frontend: each
// limit answers as documented, and the access log names the limit.

// sendFrom makes a request as the client at addr, behind one trusted proxy
// (the farm believes one X-Forwarded-For hop).
func sendFrom(t *testing.T, fe *localenvoy.Frontend, addr string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fe.URL+"/small.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "www.example"
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

// limitsOf counts the access log's lines by their limit field.
func limitsOf(lines []logLine) map[string]int {
	out := map[string]int{}
	for _, l := range lines {
		out[fmt.Sprint(l["limit"])]++
	}
	return out
}

func TestAClientOverItsRequestRateGets429AndOthersAreServed(t *testing.T) {
	const burst = 3
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) {
		wf.Spec.Frontend.ClientAddress.TrustedHops = 1
		wf.Spec.Frontend.ClientLimits.PerAddress = v1.RequestRate{RequestsPerSecond: 1, Burst: burst}
	})
	start := time.Now()
	served, limited := 0, 0
	for range 12 {
		status, h := sendFrom(t, fe, "203.0.113.7")
		switch {
		case status == http.StatusOK:
			served++
		case status == http.StatusTooManyRequests && h.Get(envoy.LimitHeader) == envoy.LimitPerAddress && h.Get("Retry-After") == "1":
			limited++
		default:
			t.Fatalf("a flooding client got %d %v, want 200 or 429 naming %s with Retry-After", status, h, envoy.LimitPerAddress)
		}
	}
	// The bucket holds burst requests and gains one a second.
	if most := burst + int(time.Since(start)/time.Second) + 1; served < burst || served > most || limited == 0 {
		t.Errorf("a client at 1 request/s with a burst of %d: %d served, %d limited; want %d to %d served", burst, served, limited, burst, most)
	}
	if status, _ := sendFrom(t, fe, "198.51.100.9"); status != http.StatusOK {
		t.Errorf("another client got %d while the first was limited, want 200", status)
	}
	if got := limitsOf(accessLog(t, fe)); got[envoy.LimitPerAddress] != limited || got[envoy.LimitNone] != served+1 {
		t.Errorf("the access log's limits %v, want %d %s and %d %s", got, limited, envoy.LimitPerAddress, served+1, envoy.LimitNone)
	}
}

func TestANetworkOverItsRequestRateGets429FromEveryAddressAndOtherNetworksAreServed(t *testing.T) {
	const burst = 4
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) {
		wf.Spec.Frontend.ClientAddress.TrustedHops = 1
		wf.Spec.Frontend.ClientLimits.PerClassC = v1.RequestRate{RequestsPerSecond: 1, Burst: burst}
		wf.Spec.Frontend.ClientLimits.PerAddress = v1.RequestRate{RequestsPerSecond: 100}
	})
	start := time.Now()
	served, limited := 0, 0
	for i := range 12 {
		// A different address each time: only the network's limit applies.
		status, h := sendFrom(t, fe, fmt.Sprintf("203.0.113.%d", i+1))
		switch {
		case status == http.StatusOK:
			served++
		case status == http.StatusTooManyRequests && h.Get(envoy.LimitHeader) == envoy.LimitPerClassC:
			limited++
		default:
			t.Fatalf("a flooding network got %d %v, want 200 or 429 naming %s", status, h, envoy.LimitPerClassC)
		}
	}
	if most := burst + int(time.Since(start)/time.Second) + 1; served < burst || served > most || limited == 0 {
		t.Errorf("a network at 1 request/s with a burst of %d: %d served, %d limited; want %d to %d served", burst, served, limited, burst, most)
	}
	if status, _ := sendFrom(t, fe, "203.0.114.1"); status != http.StatusOK {
		t.Errorf("a client of the next network got %d, want 200", status)
	}
	if got := limitsOf(accessLog(t, fe)); got[envoy.LimitPerClassC] != limited {
		t.Errorf("the access log's limits %v, want %d %s", got, limited, envoy.LimitPerClassC)
	}
}

// rawExchange writes request on a new connection, reads the answer and
// reports its status with how long it took; 0 when the frontend closed the
// connection without one.
func rawExchange(t *testing.T, fe *localenvoy.Frontend, request string) (int, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(start.Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, time.Since(start)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// bodyReader is a worker that answers once it has read a request's body,
// as an application taking a form or an upload does.
func bodyReader(t *testing.T) int {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		_, _ = io.WriteString(w, "read\n")
	}))
	t.Cleanup(srv.Close)
	port, err := strconv.Atoi(strings.TrimPrefix(srv.URL, "http://127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestSlowAndLargeRequestsMeetTheFarmsBounds(t *testing.T) {
	fe := frontend(t, bodyReader(t), func(wf *v1.WebFarm) {
		wf.Spec.Frontend.ClientLimits.RequestHeadersTimeout = "1s"
		wf.Spec.Frontend.ClientLimits.RequestBodyTimeout = "2s"
		wf.Spec.Frontend.ClientLimits.MaxRequestHeadersKiB = 2
	})
	cases := []struct {
		name    string
		request string
		status  int
		atLeast time.Duration
	}{
		{"headers that never end get 408 after the headers timeout",
			"GET /small.txt HTTP/1.1\r\nHost: www.example\r\nX-Slow: 1\r\n", http.StatusRequestTimeout, 900 * time.Millisecond},
		{"a body that never ends gets 408 after the body timeout",
			"POST /small.txt HTTP/1.1\r\nHost: www.example\r\nContent-Length: 100\r\n\r\nonly a part", http.StatusRequestTimeout, 1900 * time.Millisecond},
		{"headers over the size bound get 431 at once",
			"GET /small.txt HTTP/1.1\r\nHost: www.example\r\nX-Large: " + strings.Repeat("a", 3000) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, 0},
		{"a request within the bounds is served",
			"GET /small.txt HTTP/1.1\r\nHost: www.example\r\nX-Fine: " + strings.Repeat("a", 1000) + "\r\n\r\n", http.StatusOK, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, took := rawExchange(t, fe, tc.request)
			if status != tc.status || took < tc.atLeast || took > 15*time.Second {
				t.Errorf("answer %d after %v, want %d after at least %v", status, took, tc.status, tc.atLeast)
			}
		})
	}
	got := limitsOf(accessLog(t, fe))
	for _, limit := range []string{envoy.LimitHeadersTimeout, envoy.LimitBodyTimeout, envoy.LimitHeadersSize} {
		if got[limit] != 1 {
			t.Errorf("the access log's limits %v, want one %s", got, limit)
		}
	}
}

// In L4 mode the farm answers no refusal in HTTP: a request past a client's
// rate has its connection reset, as a stopped pool's, and is logged with
// its limit all the same.
func TestInL4ModeAClientOverItsRequestRateHasItsConnectionReset(t *testing.T) {
	const burst = 2
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) {
		wf.Spec.UnavailableResponse = v1.UnavailableL4
		wf.Spec.Frontend.ClientAddress.TrustedHops = 1
		wf.Spec.Frontend.ClientLimits.PerAddress = v1.RequestRate{RequestsPerSecond: 1, Burst: burst}
	})
	served, reset := 0, 0
	for range 8 {
		status, took := rawExchange(t, fe, "GET /small.txt HTTP/1.1\r\nHost: www.example\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n")
		switch status {
		case http.StatusOK:
			served++
		case 0:
			reset++
		default:
			t.Fatalf("a flooding client got %d after %v in L4 mode, want 200 or a reset", status, took)
		}
	}
	if served < burst || reset == 0 {
		t.Errorf("a client at 1 request/s with a burst of %d in L4 mode: %d served, %d reset", burst, served, reset)
	}
	if status, _ := sendFrom(t, fe, "198.51.100.9"); status != http.StatusOK {
		t.Errorf("another client got %d while the first was reset, want 200", status)
	}
	if got := limitsOf(accessLog(t, fe)); got[envoy.LimitPerAddress] != reset {
		t.Errorf("the access log's limits %v, want %d %s", got, reset, envoy.LimitPerAddress)
	}
}
