// Command webfarm-testapp is the application the end-to-end tests run in
// AppPools (it ships in the client image): a web application whose requests
// can be made slow, fail, or crash the worker, and which counts how many
// requests it serves at once, so tests can assert what the frontend let
// through.
//
//	GET /anything?delay=2s   answers after 2 s
//	GET /anything?status=500 answers 500
//	GET /anything?exit=1     exits the process with status 1 (a crash)
//	GET /anything?env=NAME   answers "NAME=<the environment variable>"
//	GET /anything?file=PATH  answers "PATH=<the file's contents>" (404 if it cannot be read)
//	GET /anything?spin=30s   keeps a CPU busy for 30 s, then answers
//	GET /anything?hang=1     hangs the process: this and every later request,
//	                         /healthz too, waits until its client gives up
//	GET /stats               {"inFlight":..,"maxInFlight":..,"served":..}
//	GET /ws                  a WebSocket that answers each text message with "<hostname>: <message>"
//	GET /healthz             200, not counted (the kubelet's probes)
//
// With --grpc it serves gRPC without TLS instead: the gRPC health checking
// protocol and HoldMethod, a slow call counted as requests are.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/websocket"
)

// maxDelay bounds ?delay so that a test's mistake cannot hold a worker for long.
const maxDelay = time.Minute

// maxGrowMiB bounds what one request may make the application hold.
const maxGrowMiB = 256

// leak is memory the application keeps, as a leaking one does.
var leak leaked

type leaked struct {
	mu     sync.Mutex
	blocks [][]byte
}

// grow keeps mib MiB more, each page written so that it counts in the
// working set; it returns the MiB held.
func (l *leaked) grow(mib int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range mib {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		l.blocks = append(l.blocks, b)
	}
	return len(l.blocks)
}

type counters struct {
	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	served      int
}

func (c *counters) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight++
	c.maxInFlight = max(c.maxInFlight, c.inFlight)
}

func (c *counters) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	c.served++
}

func (c *counters) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	snapshot := map[string]int{"inFlight": c.inFlight, "maxInFlight": c.maxInFlight, "served": c.served}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(snapshot)
}

func app(stats *counters, hostname string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stats.enter()
		defer stats.leave()
		q := r.URL.Query()
		if name := q.Get("env"); name != "" {
			// What the pool gave the application (a value from a Secret, say).
			fmt.Fprintf(w, "%s=%s\n", name, os.Getenv(name))
			return
		}
		if path := q.Get("file"); path != "" {
			// A file the pool mounted (a key of a Secret, say).
			b, err := os.ReadFile(path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			fmt.Fprintf(w, "%s=%s\n", path, b)
			return
		}
		if n := q.Get("grow"); n != "" {
			// An application whose memory grows (a leak): keep n MiB more.
			mib, err := strconv.Atoi(n)
			if err != nil || mib < 1 || mib > maxGrowMiB {
				http.Error(w, fmt.Sprintf("grow must be 1-%d (MiB)", maxGrowMiB), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "app on %s: holds %d MiB\n", hostname, leak.grow(mib))
			return
		}
		if q.Get("exit") != "" {
			log.Printf("exiting on request %s", r.URL)
			os.Exit(1)
		}
		status := http.StatusOK
		if s := q.Get("status"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 200 || n > 599 {
				http.Error(w, "status must be 200-599", http.StatusBadRequest)
				return
			}
			status = n
		}
		if d := q.Get("spin"); d != "" {
			spin, err := time.ParseDuration(d)
			if err != nil || spin < 0 || spin > maxDelay {
				http.Error(w, "spin must be a duration up to "+maxDelay.String(), http.StatusBadRequest)
				return
			}
			for end := time.Now().Add(spin); time.Now().Before(end) && r.Context().Err() == nil; {
				busy()
			}
		}
		if d := q.Get("delay"); d != "" {
			delay, err := time.ParseDuration(d)
			if err != nil || delay < 0 || delay > maxDelay {
				http.Error(w, "delay must be a duration up to "+maxDelay.String(), http.StatusBadRequest)
				return
			}
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprintf(w, "app on %s: %s %s\n", hostname, r.Method, r.URL.Path)
	}
}

// hangable makes the application stop answering, as a deadlocked one does:
// after a request with ?hang set, it answers none, its health check
// included, until the process is restarted.
func hangable(next http.Handler) http.Handler {
	var hung atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hang") != "" && !hung.Swap(true) {
			log.Printf("hanging on request %s", r.URL)
		}
		if hung.Load() {
			<-r.Context().Done() // the client gave up
			return
		}
		next.ServeHTTP(w, r)
	})
}

// echo is a WebSocket that answers each text message with the hostname and
// the message, so a test sees which worker holds it.
func echo(hostname string) websocket.Handler {
	return func(ws *websocket.Conn) {
		for {
			var msg string
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return
			}
			if err := websocket.Message.Send(ws, hostname+": "+msg); err != nil {
				return
			}
		}
	}
}

// busy burns a little CPU; its result is kept so the loop is not optimised away.
func busy() {
	x := 0
	for i := range 100000 {
		x += i * i
	}
	sink = x
}

// sink keeps the CPU loop's result, so the compiler cannot drop the loop.
var sink int //nolint:unused // written, never read: that is the point

func main() {
	listen := flag.String("listen", ":9000", "address to listen on")
	grpcMode := flag.Bool("grpc", false, "serve gRPC (h2c) instead of HTTP")
	flag.Parse()
	hostname, _ := os.Hostname()
	stats := &counters{}
	if *grpcMode {
		log.Fatal(serveGRPC(*listen, hostname, stats))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /stats", stats)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.Handle("/ws", echo(hostname))
	mux.Handle("/", app(stats, hostname))
	server := &http.Server{Addr: *listen, Handler: hangable(mux), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on %s", *listen)
	log.Fatal(server.ListenAndServe())
}
