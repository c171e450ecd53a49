// Package discovery lists the farms' Envoy frontends for Prometheus' HTTP
// service discovery (http_sd_configs), served beside the operator's metrics.
package discovery

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
)

// FrontendsPath is where the operator lists its farms' Envoy
// frontends for Prometheus' HTTP service discovery (http_sd_configs): any
// Prometheus, with or without Kubernetes service discovery, can scrape the
// per-pool counters the autoscaler's default query reads, labelled with the
// namespace and pod it needs.
const FrontendsPath = "/discovery/frontends"

// targetGroup is one entry of Prometheus' HTTP service discovery format.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// Frontends serves the running frontend pods as scrape targets of
// their Envoy admin's Prometheus page.
func Frontends(c client.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var pods corev1.PodList
		if err := c.List(r.Context(), &pods, client.MatchingLabels{
			k8s.LabelManagedBy: k8s.ManagedBy, k8s.LabelComponent: k8s.ComponentFrontend,
		}); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(frontendTargets(pods.Items))
	})
}

// frontendTargets are the scrape targets of the frontend pods that run,
// sorted so that the answer changes only when the pods do.
func frontendTargets(pods []corev1.Pod) []targetGroup {
	groups := []targetGroup{}
	for _, p := range pods {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		groups = append(groups, targetGroup{
			Targets: []string{net.JoinHostPort(p.Status.PodIP, strconv.Itoa(envoy.StatusPort))},
			Labels: map[string]string{
				"__metrics_path__": envoy.MetricsPath,
				"namespace":        p.Namespace,
				"pod":              p.Name,
				"webfarm_farm":     p.Labels[k8s.LabelInstance],
			},
		})
	}
	slices.SortFunc(groups, func(a, b targetGroup) int {
		return strings.Compare(a.Labels["namespace"]+"/"+a.Labels["pod"], b.Labels["namespace"]+"/"+b.Labels["pod"])
	})
	return groups
}
