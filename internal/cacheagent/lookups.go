package cacheagent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// lookups counts the cache tier's requests by how they were answered,
// without a message per hit:
//   - misses and bypasses pass through the agent, which counts them;
//   - the few requests that neither hit nor reach the agent (an unknown
//     pool, a bad request) nginx logs to the agent's datagram socket;
//   - hits are the rest of nginx's own request count (stub_status), less
//     the agent's own reads of it. The kubelet probes nginx over TCP, so no
//     other request reaches nginx's status port.
type lookups struct {
	misses, bypasses, unseen atomic.Int64

	statusURL string
	client    *http.Client

	mu        sync.Mutex
	reads     int64 // the agent's stub_status requests, counted by nginx too
	lastTotal int64 // nginx's request count at the last read
	base      int64 // requests of nginx processes before the last restart
	hits      int64 // never decreases (see hitCount)
	// Recent readings of nginx's count, oldest first: the hits are worked
	// out from one at least settleTime old.
	readings []reading
}

// reading is what nginx had counted at a time, less the agent's own reads.
type reading struct {
	at       time.Time
	requests int64
}

// settleTime is how long after nginx counts a request that is no hit the
// agent has counted it too: a miss on its way to the agent, or nginx's log
// datagram of a request it refused, sent after its answer.
const settleTime = time.Second

// request counts a request that reached the agent.
func (l *lookups) request(cacheable bool) {
	if cacheable {
		l.misses.Add(1)
	} else {
		l.bypasses.Add(1)
	}
}

// hitCount reads nginx's request count and returns the hits so far: the
// requests nginx had counted settleTime ago or earlier, less those that were
// no hit (all of which the agent has counted by now). A count worked out
// from a newer reading could take a request still on its way to the agent
// for a hit, and the count never goes back: it lags by up to settleTime
// instead, plus the time between reads.
func (l *lookups) hitCount(ctx context.Context, now time.Time) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	total, err := l.nginxRequests(ctx)
	if err != nil {
		if neverSent(err) {
			l.reads--
		}
		return l.hits, err
	}
	if total < l.lastTotal { // nginx restarted: its count starts again
		l.base += l.lastTotal
	}
	l.lastTotal = total
	l.readings = append(l.readings, reading{at: now, requests: l.base + total - l.reads})
	settled := -1
	for i, r := range l.readings {
		if now.Sub(r.at) >= settleTime {
			settled = i
		}
	}
	if settled >= 0 {
		hits := l.readings[settled].requests - l.misses.Load() - l.bypasses.Load() - l.unseen.Load()
		l.hits = max(l.hits, hits)
		l.readings = l.readings[settled:]
	}
	return l.hits, nil
}

// neverSent tells whether a failed read of nginx's count failed before it
// had a connection, so nginx did not count it. A read that failed later (a
// timeout, a caller that gave up) reached nginx, which counts it when it
// reads it: it stays among the reads, or it would count as a hit.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// nginxRequests reads "requests" from nginx's stub_status page:
//
//	Active connections: 1
//	server accepts handled requests
//	 16 16 31
func (l *lookups) nginxRequests(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.statusURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", l.statusURL, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "server accepts handled requests") && sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 {
				return strconv.ParseInt(f[2], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("GET %s: no request count in the page", l.statusURL)
}

// listen receives nginx's log of the requests that neither hit nor reached
// the agent, on a Unix datagram socket at path (nginx never waits for the
// agent), until the connection is closed.
func (l *lookups) listen(path string) (*net.UnixConn, error) {
	_ = os.Remove(path) // a socket left by a previous run of the container
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	// nginx's workers may run as another user than the agent (a root master).
	if err := os.Chmod(path, 0o666); err != nil {
		conn.Close()
		return nil, err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
			l.unseen.Add(1)
		}
	}()
	return conn, nil
}
