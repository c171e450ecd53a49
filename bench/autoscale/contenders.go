package main

import (
	"errors"
	"time"

	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/capacity"
)

// A controller decides a pool's replica count from what it can read at a
// moment. read gives the Prometheus readings; the oracle reads none.
type controller interface {
	decide(now, current int, read func() reading) int
}

// epoch is the wall-clock time of a run's start, for the observations'
// timestamps: 04:00, the trough of the first day.
var epoch = time.Date(2026, 11, 23, startHour, 0, 0, 0, time.UTC)

var errNoSeries = errors.New("no requests series in the window")

// ours is the operator's autoscaler, fed as the controller feeds it every
// sync period: the pool's requests/s and each ready worker's CPU cores and
// node clock rate.
type ours struct {
	policy autoscale.Policy
	state  autoscale.State
}

func (o *ours) decide(now, current int, read func() reading) int {
	return int(o.state.Decide(o.policy, int32(current), observation(read())).Replicas)
}

// observation is a reading as the controller gives it to the autoscaler: a
// ready worker without a CPU figure yet makes it incomplete.
func observation(r reading) autoscale.Observation {
	o := autoscale.Observation{At: epoch.Add(time.Duration(r.now) * time.Second), RequestsPerSecond: r.requestsPerSecond, Complete: true}
	if !r.requestsMeasured {
		o.Err = errNoSeries
		return o
	}
	for _, p := range r.pods {
		switch {
		case !p.ready:
		case !p.measured:
			o.Complete = false
		default:
			o.Workers = append(o.Workers, capacity.Worker{Cores: p.cores, MHz: p.mhz})
		}
	}
	return o
}

// hpaCPU is the HPA with a CPU Utilization target of the pods' request.
type hpaCPU struct {
	behavior   hpaBehavior
	state      hpaState
	target     float64
	tolerance  float64
	podCores   float64
	rateWindow int
}

func (h *hpaCPU) decide(now, current int, read func() reading) int {
	desired, ok := cpuUtilizationReplicas(hpaPods(read(), h.podCores, h.rateWindow), current, h.target, h.tolerance)
	if !ok {
		return current
	}
	return h.state.normalize(h.behavior, now, current, desired)
}

// threshold is KEDA's Prometheus scaler: the HPA with an AverageValue
// target of requests/s per pod on the pool's total requests/s.
type threshold struct {
	behavior  hpaBehavior
	state     hpaState
	perPod    float64
	tolerance float64
}

func (k *threshold) decide(now, current int, read func() reading) int {
	r := read()
	if !r.requestsMeasured {
		return current
	}
	return k.state.normalize(k.behavior, now, current, averageValueReplicas(r.requestsPerSecond, k.perPod, current, k.tolerance))
}

// oracle runs a replica count planned from the future load.
type oracle struct {
	plan []int // per time step
	step int   // seconds
}

func (o *oracle) decide(now, _ int, _ func() reading) int { return o.plan[now/o.step] }

// fewestPods is the smallest count, from minReplicas, of pods in places
// 0, 1, ... that keeps the pool's utilisation at or below limit under rps
// requests/s of megacycles each; maxReplicas if none does.
func fewestPods(rps, megacycles, podCores, limit float64, nodeMHz func(int) float64, minReplicas, maxReplicas int) int {
	var mhz []float64
	for n := range maxReplicas + 1 {
		if n >= minReplicas {
			_, used, offered := spread(rps, megacycles, podCores, mhz)
			if !overCap(used, offered, rps, limit) {
				return n
			}
		}
		mhz = append(mhz, nodeMHz(n))
	}
	return maxReplicas
}

// oraclePlan is the count the oracle runs at each step: the most any step
// of the next pod start delay needs, so that every pod is ready when it is
// first needed, and none runs longer than it is needed.
func oraclePlan(need []int, delaySteps int) []int {
	plan := make([]int, len(need))
	for i := range need {
		for j := i; j <= i+delaySteps && j < len(need); j++ {
			plan[i] = max(plan[i], need[j])
		}
	}
	return plan
}
