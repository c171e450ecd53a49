package model

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// Models are the resolved farms and pools of one operator, shared by
// everything that renders or measures them: the reconcilers, the routing
// controller and the collectors read the same model of an object, resolved
// with the operator's Platform once per change of the object.
//
// ResolveFarm and ResolvePool read only an object's name, namespace, UID
// and spec, and the API server raises metadata.generation on every change
// of a spec, so UID and generation say exactly which resolution holds. An
// object without either (built in code, never stored) is resolved on each
// call.
//
// The returned models share their slices, maps and pointers with every
// other reader: callers must not modify them (copy a slice before
// appending to it; value methods such as Pool.WithRuntime are safe).
// Safe for concurrent use. A nil *Models keeps nothing: it resolves on
// each call with the zero Platform (for consumers built without a store).
type Models struct {
	platform Platform
	farms    resolutions[Farm]
	pools    resolutions[Pool]

	// resolveFarm and resolvePool are ResolveFarm and ResolvePool; tests
	// count the calls.
	resolveFarm func(*v1.WebFarm, Platform) (Farm, error)
	resolvePool func(*v1.AppPool, Platform) (Pool, error)
}

// NewModels is an empty store of models resolved with the platform.
func NewModels(p Platform) *Models {
	return &Models{platform: p, resolveFarm: ResolveFarm, resolvePool: ResolvePool}
}

// Platform is what the operator knows about where it runs: the platform
// every model of the store is resolved with.
func (m *Models) Platform() Platform { return m.platform }

// Farm is the farm's model (or why its spec does not resolve), resolved
// once per generation.
func (m *Models) Farm(f *v1.WebFarm) (Farm, error) {
	if m == nil {
		return ResolveFarm(f, Platform{})
	}
	return m.farms.get(f, func() (Farm, error) { return m.resolveFarm(f, m.platform) })
}

// Pool is the pool's model (or why its spec does not resolve), resolved
// once per generation. Where the pool stands at runtime is not in it (see
// Pool.WithRuntime).
func (m *Models) Pool(ap *v1.AppPool) (Pool, error) {
	if m == nil {
		return ResolvePool(ap, Platform{})
	}
	return m.pools.get(ap, func() (Pool, error) { return m.resolvePool(ap, m.platform) })
}

// ForgetFarm drops a deleted farm's model.
func (m *Models) ForgetFarm(key types.NamespacedName) { m.farms.forget(key) }

// ForgetPool drops a deleted pool's model.
func (m *Models) ForgetPool(key types.NamespacedName) { m.pools.forget(key) }

// resolutions hold the latest resolution of each object by namespace/name:
// a recreated object (a new UID) or a changed one (a higher generation)
// replaces it.
type resolutions[M any] struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*resolution[M]
}

// resolution is one generation of one object resolved, once: concurrent
// readers of the same generation wait for the first one's result.
type resolution[M any] struct {
	uid        types.UID
	generation int64
	once       sync.Once
	model      M
	err        error
}

func (r *resolutions[M]) get(o metav1.Object, resolve func() (M, error)) (M, error) {
	if o.GetUID() == "" || o.GetGeneration() == 0 {
		return resolve()
	}
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	r.mu.Lock()
	e := r.entries[key]
	switch {
	case e == nil || e.uid != o.GetUID() || e.generation < o.GetGeneration():
		e = &resolution[M]{uid: o.GetUID(), generation: o.GetGeneration()}
		if r.entries == nil {
			r.entries = map[types.NamespacedName]*resolution[M]{}
		}
		r.entries[key] = e
	case e.generation > o.GetGeneration():
		// An older copy (a cache that lags behind): resolved as it is,
		// without replacing the newer one.
		r.mu.Unlock()
		return resolve()
	}
	r.mu.Unlock()
	e.once.Do(func() { e.model, e.err = resolve() })
	return e.model, e.err
}

func (r *resolutions[M]) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, key)
}
