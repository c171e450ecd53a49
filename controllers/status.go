package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchStatus writes obj's status once per reconcile, and only when it changed
// from before: an unchanged input makes no status write.
func patchStatus[T client.Object](ctx context.Context, c client.Client, before, obj T, status func(T) any) error {
	if equality.Semantic.DeepEqual(status(before), status(obj)) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing status: %w", client.IgnoreNotFound(err))
	}
	return nil
}

// conditionClock stamps condition transitions; tests may replace it.
var conditionClock clock.PassiveClock = clock.RealClock{}

func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	c.LastTransitionTime = metav1.NewTime(conditionClock.Now().UTC().Truncate(1e9))
	meta.SetStatusCondition(conds, c)
}

// becameTrue reports whether a condition reason is new in after, so that an
// event is recorded once per transition rather than once per reconcile.
func reasonChanged(before, after []metav1.Condition, condType string) bool {
	b, a := meta.FindStatusCondition(before, condType), meta.FindStatusCondition(after, condType)
	if a == nil {
		return false
	}
	return b == nil || b.Reason != a.Reason || b.Status != a.Status || b.Message != a.Message
}
