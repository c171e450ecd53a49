package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// namespaceTerminating: the API server refused to create a child because the
// object's namespace is being deleted. The object goes with it: there is
// nothing to report, and retrying would only repeat the refusal (a storm of
// them, at the queue's first back-off steps, slows every other object's
// reconcile while a namespace goes).
func namespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// setCondition sets a condition; its lastTransitionTime changes only when its
// status does, so an unchanged verdict leaves the status as it was.
func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	c.Message = FitConditionMessage(c.Message)
	meta.SetStatusCondition(conds, c)
}

// maxConditionMessage is the API's limit on a condition's message (32,768
// bytes), less room for the mark of a cut.
const maxConditionMessage = 32768 - 64

// FitConditionMessage cuts a message the API would refuse (a farm with
// thousands of faults lists them all), at a rune boundary, and says so.
func FitConditionMessage(m string) string {
	if len(m) <= maxConditionMessage {
		return m
	}
	cut := maxConditionMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + " … (cut: " + strconv.Itoa(len(m)) + " bytes in all)"
}

// reasonChanged reports whether the condition is new or changed in after, so that an
// event is recorded once per transition rather than once per reconcile.
func reasonChanged(before, after []metav1.Condition, condType string) bool {
	b, a := meta.FindStatusCondition(before, condType), meta.FindStatusCondition(after, condType)
	if a == nil {
		return false
	}
	return b == nil || b.Reason != a.Reason || b.Status != a.Status || b.Message != a.Message
}

// failed is the verdict of a reconcile that hit an error worth retrying.
func failed(err error) (verdict, error) {
	return verdict{Reason: v1.ReasonApplyFailed, Message: err.Error()}, err
}

// warningReasons are the Ready reasons a person must act on: each new one is
// also recorded as a Warning event.
var warningReasons = map[string]bool{
	v1.ReasonInvalidSpec: true, v1.ReasonInvalidReference: true, v1.ReasonApplyFailed: true, v1.ReasonRapidFailProtection: true,
}

// warningWorthy: the verdict is a problem a person must act on and new. A
// cause of pods not starting is new when its reason is: the kubelet's words
// change as it backs off, the cause does not.
func warningWorthy(before, after []metav1.Condition, reason string) bool {
	if startupReasons[reason] {
		b, a := meta.FindStatusCondition(before, v1.ConditionReady), meta.FindStatusCondition(after, v1.ConditionReady)
		return a != nil && (b == nil || b.Reason != a.Reason)
	}
	return warningReasons[reason] && reasonChanged(before, after, v1.ConditionReady)
}

// kindOf names a custom resource's kind, for metrics (a typed object read
// from the cache carries no TypeMeta).
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *v1.WebFarm:
		return "WebFarm"
	case *v1.AppPool:
		return "AppPool"
	case *v1.CachePolicy:
		return "CachePolicy"
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

// statusObject is a WebFarm, AppPool or CachePolicy.
type statusObject interface {
	client.Object
	StatusConditions() *[]metav1.Condition
	SetObservedGeneration(int64)
}

// finish is the end of every reconcile: record the verdict in the conditions,
// raise an event when a problem appears, and write the status once, only if it
// changed. before is the object as read; the reconcile changed only obj's
// status. It returns the reconcile's error, for a retry.
//
// counted, when set, says the status adds counts to those read (queue
// refusals, cache counters): the write is then guarded by the object's
// resourceVersion, so that a stale read never lowers or loses a count, and
// counted is called once the write succeeded, to take the counts out of the
// store; after a conflict they stay there for the retry.
func finish[T statusObject](ctx context.Context, c client.Client, recorder events.EventRecorder, before, obj T, v verdict, reconcileErr error, counted func()) error {
	if namespaceTerminating(reconcileErr) {
		return nil
	}
	if reconcileErr == nil {
		obj.SetObservedGeneration(obj.GetGeneration())
	}
	setConditions(obj.StatusConditions(), obj.GetGeneration(), v)
	recordStartupBlocked(kindOf(obj), obj.GetNamespace(), obj.GetName(), v.Reason)
	if warningWorthy(*before.StatusConditions(), *obj.StatusConditions(), v.Reason) {
		recorder.Eventf(obj, nil, corev1.EventTypeWarning, v.Reason, "Reconcile", "%s", v.Message)
	}
	if equality.Semantic.DeepEqual(before, obj) {
		return reconcileErr
	}
	patch := client.MergeFrom(before)
	if counted != nil {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	switch err := c.Status().Patch(ctx, obj, patch); {
	case apierrors.IsNotFound(err):
		return nil // deleted meanwhile (a Gateway's farm goes with it): nothing to report
	case err != nil:
		return errors.Join(reconcileErr, fmt.Errorf("writing status: %w", err))
	}
	if counted != nil {
		counted()
	}
	return reconcileErr
}
