package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Activity is when each pool last got a request, as the leader's frontend
// statistics saw it; a pool first asked about counts as active then (a new
// leader does not idle pools it has not watched for their timeout).
type Activity struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// Touch records requests for a pool at.
func (a *Activity) Touch(key types.NamespacedName, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[types.NamespacedName]time.Time{}
	}
	if at.After(a.last[key]) {
		a.last[key] = at
	}
}

// TouchNamespace records requests for every pool known in a namespace.
func (a *Activity) TouchNamespace(namespace string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range a.last {
		if key.Namespace == namespace && at.After(a.last[key]) {
			a.last[key] = at
		}
	}
}

// LastActive is when the pool last got a request (now, the first time).
func (a *Activity) LastActive(key types.NamespacedName, now time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[types.NamespacedName]time.Time{}
	}
	if _, ok := a.last[key]; !ok {
		a.last[key] = now
	}
	return a.last[key]
}

// Forget drops a deleted pool.
func (a *Activity) Forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.last, key)
}
