package observations

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Notifier tells a reconciler which objects to look at again. It is the
// reconciler's source: each key goes straight into its work queue, which
// merges repeats and never drops one. Keys named before the reconciler
// started wait for it. A nil Notifier tells no one.
type Notifier struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	waiting map[types.NamespacedName]bool
}

var _ source.TypedSource[reconcile.Request] = &Notifier{}

// Notify asks the reconciler to look at key again.
func (n *Notifier) Notify(key types.NamespacedName) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queue == nil {
		if n.waiting == nil {
			n.waiting = map[types.NamespacedName]bool{}
		}
		n.waiting[key] = true
		return
	}
	n.queue.Add(reconcile.Request{NamespacedName: key})
}

// Start hands the notifier the reconciler's work queue (controller-runtime
// calls it when the controller starts).
func (n *Notifier) Start(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = queue
	for key := range n.waiting {
		queue.Add(reconcile.Request{NamespacedName: key})
	}
	n.waiting = nil
	return nil
}
