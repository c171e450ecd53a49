package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/render/k8s"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;patch

// A farm's frontends prove their farm to the xDS server and the activator
// with a certificate the operator issues into a Secret of the farm's
// namespace (internal/identity). The operator writes that Secret with
// server-side apply and never reads it (it may read no Secret but its own
// CA's): it remembers what it wrote, and renews at two thirds of the
// certificate's life. A new leader, or a restarted operator, remembers
// nothing and issues once at its first reconcile of each farm; the
// frontends take the new certificate from their next connection on.

// issuedIdentity is what this replica wrote for a farm.
type issuedIdentity struct {
	uid     types.UID // a farm recreated under its name gets a new identity
	renewAt time.Time
}

// farmIdentities remembers the identities written, per farm.
type farmIdentities struct {
	mu     sync.Mutex
	issued map[types.NamespacedName]issuedIdentity
}

func (f *farmIdentities) get(key types.NamespacedName) (issuedIdentity, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := f.issued[key]
	return i, ok
}

func (f *farmIdentities) set(key types.NamespacedName, i issuedIdentity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.issued == nil {
		f.issued = map[types.NamespacedName]issuedIdentity{}
	}
	f.issued[key] = i
}

func (f *farmIdentities) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.issued, key)
}

// identityDue decides whether a farm's identity is (re)issued now, and if
// not, how long until it is.
func identityDue(written issuedIdentity, known bool, uid types.UID, now time.Time) (issue bool, renewIn time.Duration) {
	if !known || written.uid != uid || !now.Before(written.renewAt) {
		return true, 0
	}
	return false, written.renewAt.Sub(now)
}

// syncIdentity writes the farm's identity Secret when it is due and returns
// when to come back to renew it (0: no identities issued).
func (r *WebFarmReconciler) syncIdentity(ctx context.Context, farm *v1.WebFarm) (time.Duration, error) {
	if r.Identity == nil || !farm.DeletionTimestamp.IsZero() {
		return 0, nil
	}
	key, now := client.ObjectKeyFromObject(farm), readClock(r.Clock)
	written, known := r.identities.get(key)
	if issue, renewIn := identityDue(written, known, farm.UID, now); !issue {
		return renewIn, nil
	}
	issued, err := r.Identity.IssueFarm(farm.Namespace, farm.Name)
	if err != nil {
		return 0, err
	}
	secret := k8s.FrontendIdentity(farm.Namespace, farm.Name, string(farm.UID), issued.CertPEM, issued.KeyPEM, r.Identity.CAPEM())
	if err := r.Apply(ctx, secret, client.FieldOwner(apply.FieldOwner), client.ForceOwnership); err != nil {
		return 0, err
	}
	renewAt := identity.RenewAt(issued.At, issued.NotAfter)
	r.identities.set(key, issuedIdentity{uid: farm.UID, renewAt: renewAt})
	return renewAt.Sub(now), nil
}
