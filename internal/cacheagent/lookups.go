package cacheagent

import (
	"bytes"
	"net"
	"os"
	"sync/atomic"
)

// lookups counts the cache tier's requests by how nginx answered them, from
// the one-word access log nginx sends to the agent's socket (syslog over a
// Unix datagram socket: nginx never waits for the agent, and a missing agent
// costs no request).
type lookups struct {
	hits, misses, bypasses atomic.Int64
}

// count reads one log line: "<pri>... tag: STATUS".
func (l *lookups) count(line []byte) {
	if i := bytes.LastIndex(line, []byte(": ")); i >= 0 {
		line = line[i+2:]
	}
	switch string(bytes.TrimSpace(line)) {
	case "HIT", "STALE", "UPDATING", "REVALIDATED":
		l.hits.Add(1)
	case "MISS", "EXPIRED":
		l.misses.Add(1)
	default: // BYPASS, or "-": a request the cache never looked up (a method it does not keep)
		l.bypasses.Add(1)
	}
}

// listen receives the log on a Unix datagram socket at path until the
// connection is closed.
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
	if err := conn.SetReadBuffer(4 << 20); err != nil {
		conn.Close()
		return nil, err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			l.count(buf[:n])
		}
	}()
	return conn, nil
}
