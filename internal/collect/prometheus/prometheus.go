// Package prometheus is the collectors' one reader of Prometheus, with one
// rule for its answers: an error, an answer that is not a vector, or an
// empty vector (no target, only stale series: Prometheus does not know) is
// an error, never zero; a NaN, infinite or negative sample (a counter
// reset's artefact) is unknown and left out.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	prommodel "github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// queryTimeout bounds one query.
const queryTimeout = 10 * time.Second

// ErrNoAnswer wraps a query that reached no Prometheus (the connection
// failed or timed out): unlike an error Prometheus answered with, or an
// empty answer, it holds for every query of the moment, so a reader of many
// may stop asking.
var ErrNoAnswer = errors.New("prometheus did not answer")

// ReadEvery calls read every interval until ctx ends. A failed reading is
// logged and the readings stay as they were: unknown is not zero.
func ReadEvery(ctx context.Context, interval time.Duration, name, what string, read func(context.Context) error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := read(ctx); err != nil {
				ctrl.LoggerFrom(ctx).WithName(name).Info(what, "error", err.Error())
			}
		}
	}
}

// NamespaceRegex matches the pools' namespaces in a PromQL label matcher.
// Namespace names are DNS labels: nothing in them needs escaping.
func NamespaceRegex(pools []v1.AppPool) string {
	var namespaces []string
	for _, p := range pools {
		if !slices.Contains(namespaces, p.Namespace) {
			namespaces = append(namespaces, p.Namespace)
		}
	}
	return strings.Join(namespaces, "|")
}

// ByPod is a query's instant vector by namespace and pod.
func ByPod(ctx context.Context, api promv1.API, query string) (map[types.NamespacedName]float64, error) {
	return vector(ctx, api, query, func(m prommodel.Metric) types.NamespacedName {
		return types.NamespacedName{Namespace: string(m["namespace"]), Name: string(m["pod"])}
	})
}

// ByPodName is a query of one namespace's pods: its instant vector by pod name.
func ByPodName(ctx context.Context, api promv1.API, query string) (map[string]float64, error) {
	return vector(ctx, api, query, func(m prommodel.Metric) string { return string(m["pod"]) })
}

// vector asks Prometheus for a query's instant vector, keyed by key, under
// the package's rule.
func vector[K comparable](ctx context.Context, api promv1.API, query string, key func(prommodel.Metric) K) (map[K]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	result, _, err := api.Query(ctx, query, time.Now())
	var answered *promv1.Error
	switch {
	case err != nil && !errors.As(err, &answered):
		return nil, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	case err != nil:
		return nil, err
	}
	samples, ok := result.(prommodel.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus answered a %s, want a vector", result.Type())
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("no series for %s", query)
	}
	out := map[K]float64{}
	for _, s := range samples {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		out[key(s.Metric)] = v
	}
	return out, nil
}
