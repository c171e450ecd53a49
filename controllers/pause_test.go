package controllers_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// A paused resource's spec changes reach nothing until the pause ends; the
// Paused condition's observedGeneration shows the operator saw them.
func TestAPausedResourceIsLeftAloneUntilThePauseEnds(t *testing.T) {
	ns := newNamespace(t)
	farm, pool := webFarm(ns, "web"), appPool(ns, "shop")
	create(t, appPool(ns, "blog"), cachePolicy(ns, "static"), pool, farm)
	replicas := func(d *appsv1.Deployment) int32 { return ptr.Deref(d.Spec.Replicas, 0) }
	tests := []struct {
		name          string
		obj           client.Object
		conds         func() []metav1.Condition
		child         string
		change        func()
		before, after int32 // the child's replicas while paused and after
	}{
		{"a paused farm keeps its frontend's replicas", farm, func() []metav1.Condition { return farm.Status.Conditions }, "web-frontend",
			func() { farm.Spec.Frontend.Replicas = 5 }, v1.DefaultFrontendReplicas, 5},
		{"a paused pool keeps its workers", pool, func() []metav1.Condition { return pool.Status.Conditions }, "shop-pool",
			func() { pool.Spec.Replicas = ptr.To[int32](4) }, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			child := &appsv1.Deployment{}
			testutil.Eventually(t, timeout, func() error { return get(child, ns, tt.child) })
			update(t, tt.obj, func() {
				tt.obj.SetAnnotations(map[string]string{v1.PausedAnnotation: "true"})
				tt.change()
			})
			testutil.Eventually(t, timeout, func() error {
				if err := get(tt.obj, ns, tt.obj.GetName()); err != nil {
					return err
				}
				c := meta.FindStatusCondition(tt.conds(), v1.ConditionPaused)
				if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != tt.obj.GetGeneration() {
					return fmt.Errorf("Paused condition %+v, want True for generation %d", c, tt.obj.GetGeneration())
				}
				return nil
			})
			if err := get(child, ns, tt.child); err != nil {
				t.Fatal(err)
			}
			if got := replicas(child); got != tt.before {
				t.Fatalf("while paused, %s has %d, want %d as before", tt.child, got, tt.before)
			}

			update(t, tt.obj, func() { tt.obj.SetAnnotations(nil) })
			testutil.Eventually(t, timeout, func() error {
				if err := get(child, ns, tt.child); err != nil {
					return err
				}
				if got := replicas(child); got != tt.after {
					return fmt.Errorf("after the pause, %s has %d, want %d", tt.child, got, tt.after)
				}
				if err := get(tt.obj, ns, tt.obj.GetName()); err != nil {
					return err
				}
				if c := meta.FindStatusCondition(tt.conds(), v1.ConditionPaused); c != nil {
					return fmt.Errorf("the Paused condition remains: %+v", c)
				}
				return nil
			})
		})
	}
}
