// Package apply is the one place the operator writes child objects: server-side
// apply under a single field owner, skipped when the live object already holds
// exactly what the operator owns, so an unchanged input makes no API writes.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldOwner is the field manager name of every write the operator makes.
const FieldOwner = "webfarm-operator"

// Configuration is a typed server-side apply configuration (client-go's
// applyconfigurations), which names the object it applies to.
type Configuration interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
	GetKind() *string
}

// Extractor returns the part of a live object that a field manager owns, as an
// apply configuration (client-go's ExtractDeployment, ExtractService, ...).
type Extractor[O client.Object, C Configuration] func(live O, fieldManager string) (C, error)

// Applier applies configurations and remembers, per object, the resource
// version it last saw hold a given configuration: while neither changes, the
// comparison with the object's managed fields (costly: it decodes them) is
// skipped. Any change to the object, by anyone, changes its resource version.
type Applier struct {
	Client client.Client
	seen   sync.Map // objectKey -> agreement
}

type objectKey struct{ kind, namespace, name string }

// agreement records that an object at resourceVersion held the configuration
// with digest.
type agreement struct{ resourceVersion, digest string }

// Apply makes the object named by desired hold desired's fields. It reads the
// live object into live (which the caller can then inspect, for example for
// its status) and writes only when the fields the operator owns differ.
func Apply[O client.Object, C Configuration](ctx context.Context, a *Applier, live O, desired C, extract Extractor[O, C]) (wrote bool, err error) {
	key := objectKey{kind: deref(desired.GetKind()), namespace: deref(desired.GetNamespace()), name: deref(desired.GetName())}
	desiredJSON, err := json.Marshal(desired)
	if err != nil {
		return false, err
	}
	digest := fmt.Sprintf("%x", sha256.Sum256(desiredJSON))

	switch err := a.Client.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: key.name}, live); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading %s %s/%s: %w", key.kind, key.namespace, key.name, err)
	default:
		seen := agreement{resourceVersion: live.GetResourceVersion(), digest: digest}
		if prev, ok := a.seen.Load(key); ok && prev == seen {
			return false, nil
		}
		if owned, err := extract(live, FieldOwner); err == nil && sameJSON(owned, desiredJSON) {
			a.seen.Store(key, seen)
			return false, nil
		}
	}
	if err := a.Client.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		a.seen.Delete(key)
		return false, fmt.Errorf("applying %s %s/%s: %w", key.kind, key.namespace, key.name, err)
	}
	// Apply decoded the API server's answer into desired: the new resource version.
	var written struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if raw, err := json.Marshal(desired); err == nil && json.Unmarshal(raw, &written) == nil {
		a.seen.Store(key, agreement{resourceVersion: written.Metadata.ResourceVersion, digest: digest})
	}
	return true, nil
}

// Delete removes an object if it exists and reports whether it did.
func (a *Applier) Delete(ctx context.Context, obj client.Object) (bool, error) {
	if gvk, err := apiutil.GVKForObject(obj, a.Client.Scheme()); err == nil {
		a.seen.Delete(objectKey{kind: gvk.Kind, namespace: obj.GetNamespace(), name: obj.GetName()})
	}
	err := a.Client.Delete(ctx, obj, client.PropagationPolicy("Background"))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// sameJSON compares an apply configuration with the JSON of another of the
// same type (struct fields in a fixed order, map keys sorted).
func sameJSON(a any, b []byte) bool {
	ja, err := json.Marshal(a)
	return err == nil && string(ja) == string(b)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
