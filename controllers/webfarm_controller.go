package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/internal/xds"
)

// WebFarmReconciler turns a WebFarm into its Envoy frontend: a Deployment, its
// bootstrap ConfigMap, a Service and a ServiceAccount.
type WebFarmReconciler struct {
	client.Client
	Applier *apply.Applier
	// Models are the operator's resolved farms and pools, shared with the
	// routing controller and the collectors (nil: each reconcile resolves
	// its farm with Platform).
	Models   *model.Models
	Platform model.Platform
	Recorder events.EventRecorder
	// Observations, when set, holds what the farms' frontends made of their
	// certificates (CertificatesReady), which configuration each runs
	// (ConfigAccepted) and the autoscaler's report on their capacity.
	Observations *observations.Store
	// Notifier, when set, names farms whose certificates, frontends'
	// configurations or capacity report changed.
	Notifier *observations.Notifier
	// XDS, when set, is this replica's xDS server: the version it serves
	// each farm and the last configuration a farm's Envoy refused.
	XDS *xds.Server
	// GatewayAPI: the farm's status counts its Gateways' routes, so the
	// controller watches Gateway API's objects.
	GatewayAPI bool
	// Translations of the Gateways, shared with the routing and Gateway
	// controllers (nil: each reconcile translates).
	Translations *Translations
	// Identity, when set, issues each farm's control identity (the
	// frontends' client certificate for xDS and the activator).
	Identity *identity.Authority
	// Clock tells when identities are due (nil: the real clock).
	Clock      clock.PassiveClock
	identities farmIdentities
}

// +kubebuilder:rbac:groups=webfarm.dev,resources=webfarms,verbs=get;list;watch
// +kubebuilder:rbac:groups=webfarm.dev,resources=webfarms/status,verbs=patch
// +kubebuilder:rbac:groups=webfarm.dev,resources=webfarms/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch

// Reconcile brings one WebFarm's frontend to the desired state and reports it.
func (r *WebFarmReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	farm := &v1.WebFarm{}
	if err := r.Get(ctx, req.NamespacedName, farm); err != nil {
		if apierrors.IsNotFound(err) {
			if r.Observations != nil {
				r.Observations.ForgetFarm(req.NamespacedName)
			}
			if r.Models != nil {
				r.Models.ForgetFarm(req.NamespacedName)
			}
			recordStartupBlocked("WebFarm", req.Namespace, req.Name, "")
			metrics.ForgetFarm(req.Namespace, req.Name)
			r.identities.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A GatewayClass's template farm runs no frontend.
	var templateOfClass string
	if r.GatewayAPI {
		var err error
		if templateOfClass, err = templateOf(ctx, r.Client, farm); err != nil {
			return ctrl.Result{}, err
		}
	}
	// The identity is renewed whatever the spec or pause: the frontends
	// keep talking to the operator. A template has no frontend to talk.
	var renewIn time.Duration
	if templateOfClass == "" {
		var err error
		if renewIn, err = r.syncIdentity(ctx, farm); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := farm.DeepCopy()
	m, invalid := r.FarmModel(farm)
	var served gatewayServing
	if r.GatewayAPI && invalid == nil {
		var err error
		if served, err = gatewaysServed(ctx, r.Client, r.Translations, farm); err != nil {
			return ctrl.Result{}, err
		}
		// The frontend mounts its Gateways' certificates; their routes
		// reach it over xDS (a tenant's change rolls no frontend).
		m.GatewayListeners = served.listeners
	}
	// What the frontends serve holds while reconciliation is paused too.
	r.setCertificates(farm, m, invalid)
	r.setFrontendConfig(farm)
	if paused, err := syncPaused(ctx, r.Client, before, farm); paused || err != nil {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: renewIn}, nil
	}
	v, err := r.reconcile(ctx, farm, m, served, templateOfClass, invalid)
	if err := finish(ctx, r.Client, r.Recorder, before, farm, v, err, nil); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: renewIn}, nil
}

// FarmModel is the model the reconciler renders the farm from, or why its
// spec does not resolve.
func (r *WebFarmReconciler) FarmModel(farm *v1.WebFarm) (model.Farm, error) {
	return modelsOr(r.Models, r.Platform).Farm(farm)
}

// modelsOr is the shared models, or, without them, a store of one use that
// resolves with the platform given.
func modelsOr(models *model.Models, p model.Platform) *model.Models {
	if models != nil {
		return models
	}
	return model.NewModels(p)
}

// reconcile applies the farm's children from its model m and fills its
// status figures, counting what its Gateways give it (served); templateOf
// names the GatewayClass whose template the farm is (empty: none); invalid
// says why its spec does not resolve. The error is one worth retrying.
func (r *WebFarmReconciler) reconcile(ctx context.Context, farm *v1.WebFarm, m model.Farm, served gatewayServing, templateOf string, invalid error) (verdict, error) {
	if invalid != nil {
		// The children keep their last good configuration.
		return verdict{Reason: v1.ReasonInvalidSpec, Message: invalid.Error()}, nil
	}
	if templateOf != "" {
		// A farm that ran before it became a template stops its frontend.
		frontend := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: farm.Namespace, Name: vocabulary.FrontendName(farm.Name)}}
		if err := r.Delete(ctx, frontend); err != nil && !apierrors.IsNotFound(err) {
			return failed(err)
		}
		farm.Status.FrontendCapacity = v1.FrontendCapacity{}
		return verdict{Ready: true, Reason: v1.ReasonGatewayClassTemplate,
			Message: "the template of the farms of GatewayClass " + templateOf + "'s Gateways: it runs no frontend"}, nil
	}
	// The routes of the farm's Gateways count as its sites in the status.
	routed := m
	if r.GatewayAPI {
		routed = withGateways(m, gatewayServing{sites: served.sites})
		farm.Status.GatewayAppPools = gatewayPools(served.sites)
		farm.Status.GatewayCachedPools = gatewayCachedPools(served.sites)
	}
	farm.Status.HostCount = int32(routed.HostCount())
	farm.Status.PoolCount = int32(len(routed.Pools))
	farm.Status.Address = k8s.FrontendURL(m)
	refs, err := r.lookUpReferences(ctx, routed)
	if err != nil {
		return failed(err)
	}
	scaling, err := r.scaleFrontends(ctx, farm, &m)
	if err != nil {
		return failed(err)
	}
	frontend, err := r.applyChildren(ctx, m)
	if err != nil {
		return failed(err)
	}
	if scaling.EventReason != "" {
		r.Recorder.Eventf(farm, nil, corev1.EventTypeNormal, scaling.EventReason, "Autoscale", "%s", scaling.EventMessage)
	}
	desired, ready, _ := replicaCounts(frontend)
	farm.Status.FrontendReplicas = readyCount(ready, desired)
	fv, err := observeWorkload(ctx, r.Client, "frontend", frontend)
	if err != nil {
		return failed(err)
	}
	return farmVerdict(refs, fv), nil
}

// references is what the farm's routes point at.
type references struct {
	missingPools, missingPolicies, poolsNotReady []string
}

func (r *WebFarmReconciler) lookUpReferences(ctx context.Context, m model.Farm) (references, error) {
	var refs references
	for _, name := range m.Pools {
		pool := &v1.AppPool{}
		switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, pool); {
		case apierrors.IsNotFound(err):
			refs.missingPools = append(refs.missingPools, name)
		case err != nil:
			return refs, err
		case !meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionReady):
			refs.poolsNotReady = append(refs.poolsNotReady, name)
		}
	}
	for _, name := range m.CachePolicies {
		switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, &v1.CachePolicy{}); {
		case apierrors.IsNotFound(err):
			refs.missingPolicies = append(refs.missingPolicies, name)
		case err != nil:
			return refs, err
		}
	}
	return refs, nil
}

// farmVerdict decides a farm's readiness: references first (a person must fix
// those), then the frontend, then the pools behind it.
func farmVerdict(refs references, fv verdict) verdict {
	var missing []string
	if len(refs.missingPools) > 0 {
		missing = append(missing, "AppPool "+quoteAll(refs.missingPools))
	}
	if len(refs.missingPolicies) > 0 {
		missing = append(missing, "CachePolicy "+quoteAll(refs.missingPolicies))
	}
	if len(missing) > 0 {
		return verdict{Reason: v1.ReasonInvalidReference,
			Message: "routes name objects that do not exist in the namespace: " + strings.Join(missing, "; ") + "; their routes answer 503"}
	}
	if !fv.Ready {
		return fv
	}
	if len(refs.poolsNotReady) > 0 {
		return verdict{Reason: v1.ReasonPoolsNotReady, Message: "pools not ready: " + strings.Join(refs.poolsNotReady, ", ")}
	}
	return fv
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func (r *WebFarmReconciler) applyChildren(ctx context.Context, m model.Farm) (*appsv1.Deployment, error) {
	bootstrap, err := envoy.Bootstrap(m)
	if err != nil {
		return nil, err
	}
	return applyWorkload(ctx, r.Applier, workload(k8s.Frontend(m, bootstrap)))
}

// SetupWithManager watches WebFarms, their children, the pools and cache
// policies their routes name, and the farms the notifier names.
func (r *WebFarmReconciler) SetupWithManager(mgr ctrl.Manager, opts ControllerOptions) error {
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Notifier != nil {
		b = b.WatchesRawSource(r.Notifier)
	}
	b = b.
		For(&v1.WebFarm{}, specOrMetadataChanged).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, startupChangeHandler{component: vocabulary.ComponentFrontend})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&v1.AppPool{}, enqueueBatched(r.farmsUsing(IndexFarmPools)), poolReadinessChanged).
		Watches(&v1.CachePolicy{}, handler.EnqueueRequestsFromMapFunc(r.farmsUsing(indexFarmPolicies)), existenceChanged)
	if r.GatewayAPI {
		b = watchFarmsOfGateways(b, r.Client).
			Watches(&gwv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(templateFarm))
	}
	return b.WithOptions(opts.controller()).Complete(r)
}

// templateFarm maps a GatewayClass to the WebFarm its parametersRef names.
func templateFarm(_ context.Context, o client.Object) []reconcile.Request {
	ref := o.(*gwv1.GatewayClass).Spec.ParametersRef
	if ref == nil || ref.Namespace == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}}}
}

// farmsUsing maps a pool or policy to the farms in its namespace whose routes name it.
func (r *WebFarmReconciler) farmsUsing(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var farms v1.WebFarmList
		if err := r.List(ctx, &farms, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing farms", "index", index, "name", o.GetName())
			return nil
		}
		reqs := make([]reconcile.Request, len(farms.Items))
		for i, f := range farms.Items {
			reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&f)}
		}
		return reqs
	}
}
