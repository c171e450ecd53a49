// Package activator holds the requests for an application pool that has no
// ready worker and starts on demand (IIS's demand start of an idle pool): it
// asks for the pool to start, waits a bounded time for a ready worker, with
// a bounded number of requests waiting per pool, and hands each request to
// the worker. The frontends route such a pool's requests here until they
// have a ready worker of their own. Server serves it on every replica of the
// operator, over the operator's cache.
package activator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Header names the pool a request is for, "namespace/name"; the frontend
// sets it.
const Header = model.ActivateHeader

// Pools is what the activator needs of the cluster.
type Pools interface {
	// ReadyWorker is the address ("ip:port") of a ready worker of the pool.
	ReadyWorker(ctx context.Context, namespace, pool string) (string, bool)
	// Start asks for an idle pool to start; started reports whether this
	// call asked (false: the pool was not idle, or another request asked).
	Start(ctx context.Context, namespace, pool string) (started bool, err error)
	// NoWorkerComing says why no worker is coming, or nil: ErrPoolStopped
	// (rapid-fail protection, its CPU limit or an administrator stopped it)
	// or ErrPoolCannotStart (its status says its workers cannot start: an
	// image that cannot be pulled, a failed startup check, no room on the
	// nodes, a missing ConfigMap).
	NoWorkerComing(ctx context.Context, namespace, pool string) error
	// Serves: the farm routes requests to the pool (both in namespace).
	Serves(ctx context.Context, namespace, farm, pool string) bool
}

// Why no worker is coming for a pool.
var (
	ErrPoolStopped     = errors.New("the application pool is stopped")
	ErrPoolCannotStart = errors.New("the application pool cannot start")
)

// Bodies of the activator's 503s, which invite a retry.
const (
	QueueFullBody   = "Service Unavailable: the application pool is starting and its start queue is full.\n"
	TimeoutBody     = "Service Unavailable: the application pool did not start in time.\n"
	CannotStartBody = "Service Unavailable: the application pool cannot start.\n"
)

// Activator is an http.Handler.
type Activator struct {
	Pools Pools
	// Timeout bounds a request's wait for a ready worker.
	Timeout time.Duration
	// MaxWaiting bounds the requests waiting per pool.
	MaxWaiting int
	// Poll is how often a waiting request looks for a ready worker.
	Poll time.Duration
	// ColdStart, when set, receives how long a pool took from the request
	// that started it to its first ready worker.
	ColdStart func(namespace, pool string, took time.Duration)
	// Transport reaches the workers (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// FarmBound: each request comes over mutual TLS with a farm's identity
	// (identity.PeerFarm) and may wake only a pool its farm routes to; a
	// pod that copied a frontend's labels cannot wake any farm's pools.
	FarmBound bool

	mu      sync.Mutex
	waiting map[string]int
}

func (a *Activator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	namespace, pool, err := parsePool(r.Header.Get(Header))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if a.FarmBound {
		if why := a.forbidden(r, namespace, pool); why != "" {
			requestsForbidden.Inc()
			http.Error(w, why, http.StatusForbidden)
			return
		}
	}
	// The farm's unavailableResponse: L4 cuts the connection where L7 answers 503.
	refuse := unavailable
	if r.Header.Get(model.UnavailableResponseHeader) == model.UnavailableL4 {
		refuse = cut
	}
	key := namespace + "/" + pool
	if !a.admit(key) {
		refuse(w, QueueFullBody)
		return
	}
	begun := time.Now()
	worker, started, err := a.hold(r.Context(), namespace, pool)
	// A request counts against MaxWaiting while it is held only: once it is
	// answered or handed to a worker it no longer waits for the pool.
	a.leave(key)
	switch {
	case errors.Is(err, ErrPoolStopped):
		refuse(w, vocabulary.PoolStoppedBody)
		return
	case errors.Is(err, ErrPoolCannotStart):
		refuse(w, CannotStartBody)
		return
	case err != nil:
		refuse(w, TimeoutBody)
		return
	}
	if started && a.ColdStart != nil {
		a.ColdStart(namespace, pool, time.Since(begun))
	}
	a.forward(w, r, worker)
}

// forbidden says why the request's farm may not wake the pool, or "".
func (a *Activator) forbidden(r *http.Request, namespace, pool string) string {
	farmNamespace, farm, err := identity.PeerFarm(r.TLS)
	switch {
	case err != nil:
		return "Forbidden: " + err.Error() + "\n"
	case farmNamespace != namespace || !a.Pools.Serves(r.Context(), namespace, farm, pool):
		return "Forbidden: farm " + farmNamespace + "/" + farm + " does not route to application pool " + namespace + "/" + pool + "\n"
	}
	return ""
}

// hold waits for a worker for at most the activator's timeout.
func (a *Activator) hold(ctx context.Context, namespace, pool string) (worker string, started bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	return a.await(ctx, namespace, pool)
}

// await starts the pool if it is idle and waits for a ready worker. A pool
// that is stopped, or whose workers cannot start, ends the wait at once: its
// requests get that answer, not a timeout a minute later.
func (a *Activator) await(ctx context.Context, namespace, pool string) (worker string, started bool, err error) {
	tick := time.NewTicker(a.Poll)
	defer tick.Stop()
	for {
		if err := a.Pools.NoWorkerComing(ctx, namespace, pool); err != nil {
			return "", started, err
		}
		if w, ok := a.Pools.ReadyWorker(ctx, namespace, pool); ok {
			return w, started, nil
		}
		// Asked at every poll until it takes: a failed request to start is
		// retried, and a pool that went idle again meanwhile is started again.
		if s, err := a.Pools.Start(ctx, namespace, pool); err == nil && s {
			started = true
		}
		select {
		case <-ctx.Done():
			return "", started, ctx.Err()
		case <-tick.C:
		}
	}
}

// forward hands the request to the worker as the frontend would have: the
// path as the route rewrote it, the Host and X-Forwarded-For as they came.
func (a *Activator) forward(w http.ResponseWriter, r *http.Request, worker string) {
	target := &url.URL{Scheme: "http", Host: worker}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del(Header)
			if xff := pr.In.Header.Values("X-Forwarded-For"); len(xff) > 0 {
				pr.Out.Header["X-Forwarded-For"] = xff
			}
		},
		Transport: a.Transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			unavailable(w, fmt.Sprintf("Service Unavailable: the application pool's worker failed: %v\n", err))
		},
	}
	proxy.ServeHTTP(w, r)
}

func (a *Activator) admit(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting == nil {
		a.waiting = map[string]int{}
	}
	if a.waiting[key] >= a.MaxWaiting {
		return false
	}
	a.waiting[key]++
	return true
}

func (a *Activator) leave(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiting[key]--
	if a.waiting[key] <= 0 {
		delete(a.waiting, key)
	}
}

// Waiting is how many requests wait for the pool now.
func (a *Activator) Waiting(namespace, pool string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting[namespace+"/"+pool]
}

func unavailable(w http.ResponseWriter, body string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(body))
}

// cut closes the connection without an answer: the frontend then resets
// its client's connection, as it does for a stopped pool in a farm with
// unavailableResponse L4. Without a connection to take over it answers 503.
func cut(w http.ResponseWriter, body string) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		unavailable(w, body)
		return
	}
	_ = conn.Close()
}

// parsePool reads "namespace/name", both DNS labels.
func parsePool(v string) (namespace, pool string, err error) {
	namespace, pool, ok := strings.Cut(v, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Label(pool)) > 0 {
		return "", "", errors.New("the request names no application pool (" + Header + ": namespace/name)")
	}
	return namespace, pool, nil
}
