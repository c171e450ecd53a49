package cacheagent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A failed read of nginx's count is taken back only when nginx cannot have
// counted it: otherwise a read nginx counted would show up as a hit.
func TestAFailedReadIsTakenBackOnlyWhenItNeverReachedNginx(t *testing.T) {
	answerNever := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-answerNever }))
	t.Cleanup(func() { close(answerNever); slow.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := "http://" + closed.Addr().String()
	closed.Close()

	tests := []struct {
		name     string
		url      string
		timeout  time.Duration
		giveUp   bool
		wantSent bool
	}{
		{"a refused connection is taken back", refusing, time.Second, false, false},
		{"a read that timed out waiting for the answer is kept", slow.URL, 100 * time.Millisecond, false, true},
		{"a read whose caller gave up after connecting is kept", slow.URL, time.Minute, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := &lookups{statusURL: tt.url, client: &http.Client{Timeout: tt.timeout}}
			if tt.giveUp {
				l.client.Transport = &http.Transport{DialContext: func(ctx2 context.Context, network, addr string) (net.Conn, error) {
					conn, err := (&net.Dialer{}).DialContext(ctx2, network, addr)
					cancel() // connected: the caller gives up while the request is on its way
					return conn, err
				}}
			}
			_, err := l.nginxRequests(ctx)
			if err == nil {
				t.Fatal("the read succeeded, want a failure")
			}
			if sent := !neverSent(err); sent != tt.wantSent {
				t.Errorf("%v: kept among the reads %v, want %v", err, sent, tt.wantSent)
			}
		})
	}
}

// nginx counts a request it refuses before its log of it reaches the agent:
// a read in between must not take it for a hit, since the hits never go back.
func TestARefusedRequestWhoseLogIsOnItsWayIsNeverTakenForAHit(t *testing.T) {
	var requests atomic.Int64
	stubStatus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := requests.Add(1) // nginx counts this read too
		fmt.Fprintf(w, "Active connections: 1\nserver accepts handled requests\n %d %d %d\nReading: 0 Writing: 1 Waiting: 0\n", n, n, n)
	}))
	t.Cleanup(stubStatus.Close)
	l := &lookups{statusURL: stubStatus.URL, client: stubStatus.Client()}
	read := func(at time.Time) int64 {
		t.Helper()
		hits, err := l.hitCount(context.Background(), at)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}

	start := time.Now()
	requests.Add(5 + 1) // five hits, and a refusal whose log has not arrived
	if got := read(start); got != 0 {
		t.Errorf("hits %d at the first read, want 0: nothing has settled yet", got)
	}
	l.unseen.Add(1) // the log arrives
	for _, after := range []time.Duration{settleTime, 2 * settleTime} {
		if got := read(start.Add(after)); got != 5 {
			t.Errorf("hits %d %s after the first read, want 5", got, after)
		}
	}
}
