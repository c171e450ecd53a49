package cacheagent

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	"webfarm.dev/operator/internal/vocabulary"
)

// Values of the headers between the cache tier's nginx and the agent
// (vocabulary.Cache*Header).
const (
	lookupExpired     = "EXPIRED"
	admitted          = "1"
	misdirectedStatus = http.StatusMisdirectedRequest
)

// cacheableStatus are the statuses nginx keeps (proxy_cache_valid).
var cacheableStatus = map[int]bool{200: true, 203: true, 301: true, 404: true, 410: true}

// missProxy forwards the requests nginx did not answer from its cache to
// their pool, and tells nginx which responses to keep: the frequent ones,
// not empty and not over the size limit. A response without a length is
// read up to the limit first, so a chunked response over it is never kept.
type missProxy struct {
	upstreams     map[string]string // pool -> host:port
	maxObjectSize int64
	memorySize    int64
	store         *store
	lookups       *lookups
	hits          *FrequentHits
	now           func() time.Time
	proxy         *httputil.ReverseProxy
}

func newMissProxy(cfg vocabulary.AgentConfig, hits *FrequentHits, st *store, l *lookups, now func() time.Time) *missProxy {
	p := &missProxy{upstreams: cfg.Upstreams, maxObjectSize: cfg.MaxObjectSizeBytes, memorySize: cfg.MemorySizeBytes,
		store: st, lookups: l, hits: hits, now: now}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = p.upstreams[r.In.Header.Get(vocabulary.PoolHeader)]
			r.Out.Host = r.In.Host
			// The pool never sees nginx's headers to the agent; the response's
			// admission reads them from the request's context.
			r.Out = r.Out.WithContext(context.WithValue(r.Out.Context(), lookupKey{},
				cacheLookup{key: r.In.Header.Get(vocabulary.CacheKeyHeader), status: r.In.Header.Get(vocabulary.CacheLookupHeader)}))
			r.Out.Header.Del(vocabulary.CacheKeyHeader)
			r.Out.Header.Del(vocabulary.CacheLookupHeader)
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     60 * time.Second,
			DisableCompression:  true,
		},
		ModifyResponse: p.admit,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return p
}

func (p *missProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// nginx sends the key of a request it may keep (a HEAD reaches the
	// agent as a GET); anything else is a bypass.
	p.lookups.request(r.Header.Get(vocabulary.CacheKeyHeader) != "" && r.Method == http.MethodGet)
	if _, ok := p.upstreams[r.Header.Get(vocabulary.PoolHeader)]; !ok {
		w.WriteHeader(misdirectedStatus)
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// admit marks the response nginx may keep.
func (p *missProxy) admit(resp *http.Response) error {
	resp.Header.Del(vocabulary.CacheAdmitHeader) // only the agent says so
	req := resp.Request
	lookup, _ := req.Context().Value(lookupKey{}).(cacheLookup)
	key := lookup.key
	if key == "" || req.Method != http.MethodGet || !cacheableStatus[resp.StatusCode] {
		return nil
	}
	// An entry nginx held until it expired was frequent already.
	frequent := lookup.status == lookupExpired || p.hits.Request(key, p.now())
	if !frequent {
		return nil
	}
	size := resp.ContentLength
	if size < 0 {
		// No length (chunked): read up to one byte past the limit.
		head, err := io.ReadAll(io.LimitReader(resp.Body, p.maxObjectSize+1))
		if err != nil {
			return err
		}
		size = int64(len(head))
		if size > p.maxObjectSize {
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
			return nil
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(head))
		resp.ContentLength = size
		resp.TransferEncoding = nil
		resp.Header.Set("Content-Length", strconv.FormatInt(size, 10))
	}
	// nginx evicts the least recently used entries only when its cache
	// manager wakes (every few seconds): until then, nothing new enters a
	// full cache.
	if size == 0 || size > p.maxObjectSize || !p.store.reserve(entryName(key), size, p.memorySize, p.now()) {
		return nil
	}
	resp.Header.Set(vocabulary.CacheAdmitHeader, admitted)
	return nil
}

// cacheLookup is what nginx told the agent about a request it did not
// answer from the cache: its key ("" when it may not be cached) and its cache
// status.
type cacheLookup struct{ key, status string }

type lookupKey struct{}

type readCloser struct {
	io.Reader
	io.Closer
}
