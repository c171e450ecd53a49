package activator

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/vocabulary"
)

// clusterPools give the activator the pools as the operator's cache sees them.
type clusterPools struct {
	client client.Client
	// farmPoolsIndex is the field index of WebFarms by the pools they
	// route to (their routes' and their Gateways').
	farmPoolsIndex string
}

// Serves: the farm is among those the index says route to the pool.
func (c clusterPools) Serves(ctx context.Context, namespace, farm, pool string) bool {
	var farms v1.WebFarmList
	if err := c.client.List(ctx, &farms, client.InNamespace(namespace), client.MatchingFields{c.farmPoolsIndex: pool}); err != nil {
		return false
	}
	for _, f := range farms.Items {
		if f.Name == farm {
			return true
		}
	}
	return false
}

// ReadyWorker is a ready worker of the pool, from its EndpointSlices.
func (c clusterPools) ReadyWorker(ctx context.Context, namespace, pool string) (string, bool) {
	var slices discoveryv1.EndpointSliceList
	if err := c.client.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{
		vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentPool, vocabulary.LabelInstance: pool,
	}); err != nil {
		return "", false
	}
	for _, e := range endpoints.FromSlices(slices.Items)[vocabulary.PoolCluster(pool)] {
		if e.State == endpoints.Ready {
			return net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))), true
		}
	}
	return "", false
}

// NoWorkerComing reads the pool's status as the frontends' routes do. A
// pool it cannot read is waited for: the timeout still bounds the wait.
func (c clusterPools) NoWorkerComing(ctx context.Context, namespace, pool string) error {
	var p v1.AppPool
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pool}, &p); err != nil {
		return nil
	}
	switch {
	case lifecycle.Stopped(p.Status):
		return ErrPoolStopped
	case lifecycle.CannotStart(p.Generation, p.Status):
		return ErrPoolCannotStart
	}
	return nil
}

// Start asks an idle pool to start: the wake annotation, once per idle spell.
func (c clusterPools) Start(ctx context.Context, namespace, pool string) (bool, error) {
	var p v1.AppPool
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pool}, &p); err != nil {
		return false, err
	}
	if p.Status.IdleSince == nil {
		return false, nil
	}
	if asked, err := time.Parse(time.RFC3339Nano, p.Annotations[v1.WakeAnnotation]); err == nil && asked.After(p.Status.IdleSince.Time) {
		return false, nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1.WakeAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	return true, c.client.Patch(ctx, &p, patch)
}

// Server serves the activator on every replica of the operator:
// the frontends reach whichever their Service picks.
type Server struct {
	address string
	tls     *tls.Config
	handler *Activator
}

// ServerOptions say how the activator serves.
type ServerOptions struct {
	// Address to listen on.
	Address string
	// Timeout bounds a request's wait for its pool.
	Timeout time.Duration
	// ColdStart receives how long each started pool took to its first
	// ready worker.
	ColdStart func(namespace, pool string, took time.Duration)
	// TLS, when set, serves over mutual TLS (identity.Authority's
	// ServerTLS) and each farm wakes only its own pools; nil: plain HTTP
	// to anyone.
	TLS *tls.Config
	// FarmPoolsIndex is the operator cache's field index of WebFarms by the
	// pools they route to.
	FarmPoolsIndex string
}

// NewServer is the activator over the operator's cache.
func NewServer(c client.Client, o ServerOptions) *Server {
	return &Server{address: o.Address, tls: o.TLS, handler: &Activator{
		Pools: clusterPools{client: c, farmPoolsIndex: o.FarmPoolsIndex}, Timeout: o.Timeout, MaxWaiting: maxWaiting,
		Poll: 100 * time.Millisecond, ColdStart: o.ColdStart, FarmBound: o.TLS != nil,
	}}
}

// maxWaiting bounds the requests one operator replica holds per pool (IIS's
// default queue length).
const maxWaiting = 1000

// NeedLeaderElection: every replica holds and hands over requests.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then lets held requests finish.
func (s *Server) Start(ctx context.Context) error {
	srv := &http.Server{Addr: s.address, Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: s.tls}
	errs := make(chan error, 1)
	go func() {
		if s.tls != nil {
			errs <- srv.ListenAndServeTLS("", "") // the certificate comes from TLSConfig
			return
		}
		errs <- srv.ListenAndServe()
	}()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), s.handler.Timeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
