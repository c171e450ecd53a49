package controllers

import (
	"context"
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

// readEvery calls read every interval until ctx ends. A failed reading is
// logged and the readings stay as they were: unknown is not zero.
func readEvery(ctx context.Context, interval time.Duration, name, what string, read func(context.Context) error) error {
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

// namespaceRegex matches the pools' namespaces in a PromQL label matcher.
// Namespace names are DNS labels: nothing in them needs escaping.
func namespaceRegex(pools []v1.AppPool) string {
	var namespaces []string
	for _, p := range pools {
		if !slices.Contains(namespaces, p.Namespace) {
			namespaces = append(namespaces, p.Namespace)
		}
	}
	return strings.Join(namespaces, "|")
}

// byPod asks Prometheus for a query's instant vector, one sample per
// namespace and pod. A NaN, infinite or negative sample (a counter reset's
// artefact) is unknown, not zero: it is left out.
func byPod(ctx context.Context, api promv1.API, query string) (map[types.NamespacedName]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	result, _, err := api.Query(ctx, query, time.Now())
	if err != nil {
		return nil, err
	}
	vector, ok := result.(prommodel.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus answered a %s, want a vector", result.Type())
	}
	out := map[types.NamespacedName]float64{}
	for _, s := range vector {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		out[types.NamespacedName{Namespace: string(s.Metric["namespace"]), Name: string(s.Metric["pod"])}] = v
	}
	return out, nil
}
