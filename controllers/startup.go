package controllers

import (
	"context"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/startup"
	"webfarm.dev/operator/internal/vocabulary"
)

// Pods that cannot start say why on their owner: the workers on the AppPool,
// the frontend on the WebFarm, a cache tier on the CachePolicy. The owner
// is looked at again as soon as one of its pods finds or loses a cause.

// startupReasons are the Ready reasons of pods that cannot start.
var startupReasons = map[string]bool{
	v1.ReasonImagePullFailed: true, v1.ReasonContainerCannotStart: true, v1.ReasonStartupCheckFailed: true, v1.ReasonUnschedulable: true,
	v1.ReasonPodCreateFailed: true, v1.ReasonRolloutStalled: true,
}

var startupBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "webfarm_startup_blocked",
	Help: "1 while a WebFarm's frontend, an AppPool's workers or a CachePolicy's cache tier cannot start, labelled with the reason its Ready condition gives.",
}, []string{"kind", "namespace", "name", "reason"})

func init() { metrics.Registry.MustRegister(startupBlocked) }

// recordStartupBlocked keeps the metric to the verdict: one series while a
// cause holds, none once it is gone (or the object is).
func recordStartupBlocked(kind, namespace, name, reason string) {
	startupBlocked.DeletePartialMatch(prometheus.Labels{"kind": kind, "namespace": namespace, "name": name})
	if startupReasons[reason] {
		startupBlocked.WithLabelValues(kind, namespace, name, reason).Set(1)
	}
}

// observeWorkload is the verdict on a generated Deployment; when not every
// pod serves it reads the pods (from the cache) to say why.
func observeWorkload(ctx context.Context, c client.Reader, what string, d *appsv1.Deployment) (verdict, error) {
	v := deploymentVerdict(what, d)
	if (v.Ready && !v.Degraded) || d.Spec.Selector == nil {
		return v, nil
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return verdict{}, err
	}
	return workloadVerdict(what, d, pods.Items), nil
}

// startupChangeHandler requeues the owner of a pod of one component when the
// pod finds or loses a cause not to start (the Deployment's status alone does
// not change when a pod waits for an image or a node).
type startupChangeHandler struct{ component string }

var _ handler.TypedEventHandler[*corev1.Pod, reconcile.Request] = startupChangeHandler{}

func (h startupChangeHandler) owner(p *corev1.Pod) (reconcile.Request, bool) {
	if p.Labels[vocabulary.LabelComponent] != h.component || p.Labels[vocabulary.LabelInstance] == "" {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[vocabulary.LabelInstance]}}, true
}

func (h startupChangeHandler) Update(_ context.Context, e event.TypedUpdateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	before, _ := startup.PodBlocker(e.ObjectOld)
	after, _ := startup.PodBlocker(e.ObjectNew)
	// Readiness too: a recycled worker's replacement that became Ready lets
	// the pool remove the old worker.
	if reflect.DeepEqual(before, after) && health.PodReady(e.ObjectOld) == health.PodReady(e.ObjectNew) {
		return
	}
	if req, ok := h.owner(e.ObjectNew); ok {
		q.Add(req)
	}
}

func (h startupChangeHandler) Create(_ context.Context, e event.TypedCreateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// A pod created (or first listed after a restart of the operator) that
	// already waits for something.
	if _, blocked := startup.PodBlocker(e.Object); !blocked {
		return
	}
	if req, ok := h.owner(e.Object); ok {
		q.Add(req)
	}
}

func (h startupChangeHandler) Delete(_ context.Context, e event.TypedDeleteEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// The pod that was the cause may be the one that went.
	if req, ok := h.owner(e.Object); ok {
		q.Add(req)
	}
}

func (startupChangeHandler) Generic(context.Context, event.TypedGenericEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
