package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/xds"
)

// ConfigAccepted is the WebFarm condition that says whether every ready
// frontend runs the routing configuration the operator serves it.
const (
	ConditionConfigAccepted = "ConfigAccepted"
	ReasonConfigAccepted    = "Accepted"
	ReasonConfigRejected    = "Rejected"
	ReasonConfigUpdating    = "Updating"
)

// maxFrontendVersions is the API's bound on status.frontendConfig.frontends.
const maxFrontendVersions = 100

// frontendConfig is the verdict on a farm's frontends' configuration.
type frontendConfig struct {
	status          v1.FrontendConfigStatus
	accepted        bool
	reason, message string
}

// frontendConfigVerdict decides status.frontendConfig and ConfigAccepted
// from the version served (sent), what each ready frontend runs, and the
// last rejection this replica's xDS server received from the farm's Envoys
// (rejected: there is one). A frontend refused the configuration when the
// server holds its rejection, or when it does not run the version sent and
// refused an update since it took its own; under delta xDS a refusal of one
// kind of resources leaves the others taken, so the server's word counts
// even for a frontend that shows the version sent. Its message is Envoy's
// when this replica served that frontend.
func frontendConfigVerdict(sent string, frontends []observations.FrontendConfig, rejection xds.Rejection, rejected bool) frontendConfig {
	out := frontendConfig{status: v1.FrontendConfigStatus{Version: sent}}
	running := 0
	var refusals []string
	unexplained := false
	for i, f := range frontends {
		if i < maxFrontendVersions {
			out.status.Frontends = append(out.status.Frontends, v1.FrontendVersion{Pod: f.Pod, Version: f.Version})
		}
		if f.Version == sent {
			running++
		}
		switch {
		case rejected && rejection.Node == f.Pod:
			refusals = append(refusals, fmt.Sprintf("frontend %s refused the %s resources%s: %s",
				f.Pod, kindOfResource(rejection.TypeURL), ofVersion(rejection.Version), strings.TrimSpace(rejection.Message)))
		case f.Version != sent && f.RejectedSince():
			refusals = append(refusals, fmt.Sprintf("frontend %s runs version %s and refused a later one", f.Pod, f.Version))
			unexplained = true
		}
	}
	switch {
	case len(refusals) > 0:
		out.reason = ReasonConfigRejected
		out.message = strings.Join(refusals, "; ") + "; the frontends keep serving the configuration they run"
		if unexplained {
			out.message += "; Envoy's message is in the log of the operator replica that serves that frontend " +
				"(\"an Envoy rejected its configuration\")"
		}
	case running == len(frontends):
		out.accepted, out.reason = true, ReasonConfigAccepted
		out.message = fmt.Sprintf("%s version %s", frontendsRun(running, len(frontends)), sent)
	default:
		out.reason = ReasonConfigUpdating
		out.message = fmt.Sprintf("%s version %s", frontendsRun(running, len(frontends)), sent)
	}
	return out
}

// frontendsRun says how many of n frontends run a version.
func frontendsRun(running, n int) string {
	switch {
	case n == 1 && running == 1:
		return "the frontend runs"
	case running == n:
		return fmt.Sprintf("all %d frontends run", n)
	case running == 1:
		return fmt.Sprintf("1 of %d frontends runs", n)
	}
	return fmt.Sprintf("%d of %d frontends run", running, n)
}

// ofVersion names a refused version, when the server still knew it.
func ofVersion(v string) string {
	if v == "" {
		return ""
	}
	return " of version " + v
}

// kindOfResource is a type URL's last part ("...cluster.v3.Cluster" -> "Cluster").
func kindOfResource(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, ".")+1:]
}

// setFrontendConfig sets status.frontendConfig and ConfigAccepted from the
// version the xDS server serves the farm and what the frontend stats
// collector (internal/collect/frontendstats) stored of its frontends, with
// a Warning event when a frontend refuses a configuration. With nothing to
// judge (no xDS server, no version served yet, no frontend read) they stay
// as they are.
func (r *WebFarmReconciler) setFrontendConfig(farm *v1.WebFarm) {
	if r.Observations == nil || r.XDS == nil {
		return
	}
	nodeCluster := envoy.NodeCluster(model.Farm{Namespace: farm.Namespace, Name: farm.Name})
	routing, served := r.XDS.Routing(nodeCluster)
	frontends, read := r.Observations.FrontendConfigs(client.ObjectKeyFromObject(farm))
	if !served || !read {
		return
	}
	rejection, rejected := r.XDS.Rejection(nodeCluster)
	v := frontendConfigVerdict(routing.Version, frontends, rejection, rejected)
	farm.Status.FrontendConfig = v.status
	status := metav1.ConditionFalse
	if v.accepted {
		status = metav1.ConditionTrue
	}
	before := slices.Clone(farm.Status.Conditions)
	setCondition(&farm.Status.Conditions, metav1.Condition{Type: ConditionConfigAccepted, Status: status, Reason: v.reason,
		Message: v.message, ObservedGeneration: farm.Generation})
	if v.reason == ReasonConfigRejected && reasonChanged(before, farm.Status.Conditions, ConditionConfigAccepted) {
		r.Recorder.Eventf(farm, nil, corev1.EventTypeWarning, v.reason, "ServeConfiguration", "%s", v.message)
	}
}
