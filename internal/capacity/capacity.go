// Package capacity is the capacity planning of the IIS 6.0 case study (seed
// 000, "Capacity Planning", "Scaling Up", "Scaling Out"), as pure functions:
// a pool's cost is measured in CPU cycles per request, so that workers on
// processors of different clock rates add up, and the workers a load needs
// follow from the cycles per second it takes at a target utilisation.
package capacity

import (
	"errors"
	"fmt"
	"math"
)

// Worker is one worker's measured CPU use over a window: the CPU cores it
// kept busy (core-seconds per second) and the clock rate of its node's
// processors.
type Worker struct {
	Cores float64
	MHz   float64
}

// Megahertz is the cycles per second, in millions, the worker used.
func (w Worker) Megahertz() float64 { return w.Cores * w.MHz }

// Errors for measurements that cannot give a figure; the caller holds its
// last decision rather than scale on them.
var (
	ErrNoRequests = errors.New("no requests in the window: cycles per request are unknown")
	ErrInvalid    = errors.New("measurement is not a finite, non-negative number")
)

// MegacyclesPerRequest is what one request costs in CPU cycles, in millions:
// the cycles per second the workers used over the requests per second they
// served. 4 x 550 MHz saturated at 893 requests/s is 2,200 / 893 = 2.46.
func MegacyclesPerRequest(workers []Worker, requestsPerSecond float64) (float64, error) {
	if !valid(requestsPerSecond) {
		return 0, fmt.Errorf("requests per second %v: %w", requestsPerSecond, ErrInvalid)
	}
	if requestsPerSecond == 0 {
		return 0, ErrNoRequests
	}
	var megahertz float64
	for _, w := range workers {
		if !valid(w.Cores) || !valid(w.MHz) {
			return 0, fmt.Errorf("worker %+v: %w", w, ErrInvalid)
		}
		megahertz += w.Megahertz()
	}
	return megahertz / requestsPerSecond, nil
}

// RequiredMegahertz is the cycles per second, in millions, that a load needs
// so that it uses only targetUtilization (0 < t <= 1) of them: the larger of
// the forecast and the observed requests per second, times megacycles per
// request, over the target. 600 requests/s x 2.5 / 0.30 = 5,000 MHz.
func RequiredMegahertz(forecast, observed, megacyclesPerRequest, targetUtilization float64) (float64, error) {
	for _, v := range []float64{forecast, observed, megacyclesPerRequest} {
		if !valid(v) {
			return 0, fmt.Errorf("%v: %w", v, ErrInvalid)
		}
	}
	if !(targetUtilization > 0 && targetUtilization <= 1) {
		return 0, fmt.Errorf("target utilisation %v is not in (0, 1]", targetUtilization)
	}
	return math.Max(forecast, observed) * megacyclesPerRequest / targetUtilization, nil
}

// Replicas is how many workers of megahertzPerReplica give the required
// cycles, within [minReplicas, maxReplicas]. A tiny excess over a whole
// number of workers (rounding in the measurement) does not start another.
func Replicas(requiredMegahertz, megahertzPerReplica float64, minReplicas, maxReplicas int32) (int32, error) {
	if !valid(requiredMegahertz) || !valid(megahertzPerReplica) || megahertzPerReplica == 0 {
		return 0, fmt.Errorf("required %v MHz, %v MHz per replica: %w", requiredMegahertz, megahertzPerReplica, ErrInvalid)
	}
	if minReplicas > maxReplicas {
		return 0, fmt.Errorf("minReplicas %d above maxReplicas %d", minReplicas, maxReplicas)
	}
	n := math.Ceil(requiredMegahertz/megahertzPerReplica - 1e-9)
	return int32(math.Min(math.Max(n, float64(minReplicas)), float64(maxReplicas))), nil
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
