// Package apply is the one place the operator writes child objects: server-side
// apply under a single field owner, skipped when the live object already holds
// exactly what the operator owns, so an unchanged input makes no API writes.
package apply

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager name of every write the operator makes.
const FieldOwner = "webfarm-operator"

// Configuration is a typed server-side apply configuration (client-go's
// applyconfigurations), which names the object it applies to.
type Configuration interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
}

// Extractor returns the part of a live object that a field manager owns, as an
// apply configuration (client-go's ExtractDeployment, ExtractService, ...).
type Extractor[O client.Object, C Configuration] func(live O, fieldManager string) (C, error)

// Apply makes the object named by desired hold desired's fields. It reads the
// live object into live (which the caller can then inspect, for example for
// its status) and writes only when the fields the operator owns differ.
func Apply[O client.Object, C Configuration](ctx context.Context, c client.Client, live O, desired C, extract Extractor[O, C]) (wrote bool, err error) {
	key := client.ObjectKey{Namespace: deref(desired.GetNamespace()), Name: deref(desired.GetName())}
	switch err := c.Get(ctx, key, live); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", key, err)
	default:
		owned, err := extract(live, FieldOwner)
		if err == nil && sameJSON(owned, desired) {
			return false, nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying %s: %w", key, err)
	}
	return true, nil
}

// Delete removes an object if it exists and reports whether it did.
func Delete(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	err := c.Delete(ctx, obj, client.PropagationPolicy("Background"))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// sameJSON compares two apply configurations of one type by the JSON the API
// server would receive (struct fields in a fixed order, map keys sorted).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
