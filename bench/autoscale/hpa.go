package main

import "math"

// The Kubernetes HorizontalPodAutoscaler's algorithm (autoscaling/v2 with
// the default behaviour), as documented: a replica count from the metric's
// ratio to its target, then stabilised and rate-limited. Written here from
// its documented rules so that the benchmark can run it on the same readings
// as the other contenders.

// hpaGroup is how the HPA's replica calculation sees a pod.
type hpaGroup int

const (
	// counted: ready, with a metric taken over a window after it became
	// ready.
	counted hpaGroup = iota
	// notYetReady: pending, not ready, or still in its CPU initialisation
	// period with a metric window that began before it was ready.
	notYetReady
	// missing: ready but without a metric.
	missing
)

// cpuInitializationPeriod is the HPA's default
// (--horizontal-pod-autoscaler-cpu-initialization-period).
const cpuInitializationPeriod = 300

type hpaPod struct {
	group   hpaGroup
	usage   float64 // cores
	request float64 // cores
}

// hpaPods groups a reading's pods for the CPU utilisation calculation.
func hpaPods(r reading, podCores float64, window int) []hpaPod {
	pods := make([]hpaPod, 0, len(r.pods))
	for _, p := range r.pods {
		hp := hpaPod{request: podCores, usage: p.cores}
		switch {
		case !p.ready:
			hp.group = notYetReady
		case !p.measured:
			hp.group = missing
		case r.now < p.created+cpuInitializationPeriod && p.measuredAt < p.readySince+window:
			hp.group = notYetReady
		default:
			hp.group = counted
		}
		pods = append(pods, hp)
	}
	return pods
}

// cpuUtilizationReplicas is the HPA's replica count for a CPU Utilization
// target (a share of the pods' CPU request): ceil(ready pods x utilisation /
// target), nothing within the tolerance. On a scale-up, pods that are not
// yet ready count as using nothing, which damps it; on a scale-down they are
// left out. Pods without a metric count as using nothing on a scale-up and
// their whole request on a scale-down. If that conservative ratio is within
// the tolerance or turns the direction round, the count stays. ok is false
// when no pod has a metric: the HPA then does nothing.
func cpuUtilizationReplicas(pods []hpaPod, current int, target, tolerance float64) (replicas int, ok bool) {
	var used, requested float64
	var ready, unready, absent int
	for _, p := range pods {
		switch p.group {
		case counted:
			used += p.usage
			requested += p.request
			ready++
		case notYetReady:
			unready++
		case missing:
			absent++
		}
	}
	if ready == 0 || requested == 0 {
		return current, false
	}
	ratio := used / requested / target
	scaleUpWithUnready := unready > 0 && ratio > 1
	if !scaleUpWithUnready && absent == 0 {
		if withinTolerance(ratio, tolerance) {
			return current, true
		}
		return int(math.Ceil(ratio * float64(ready))), true
	}

	n := ready
	for _, p := range pods {
		switch {
		case p.group == missing && ratio < 1:
			used += p.request * max(1, target)
			requested += p.request
			n++
		case p.group == missing && ratio > 1, p.group == notYetReady && scaleUpWithUnready:
			requested += p.request
			n++
		}
	}
	conservative := used / requested / target
	if withinTolerance(conservative, tolerance) || (ratio < 1) != (conservative < 1) {
		return current, true
	}
	replicas = int(math.Ceil(conservative * float64(n)))
	if (conservative < 1 && replicas > current) || (conservative > 1 && replicas < current) {
		return current, true
	}
	return replicas, true
}

// averageValueReplicas is the HPA's replica count for an external metric
// with an AverageValue target (KEDA's Prometheus scaler): the metric's total
// over the target per pod, nothing while the total per current pod is
// within the tolerance of the target.
func averageValueReplicas(total, targetPerPod float64, current int, tolerance float64) int {
	if current > 0 && withinTolerance(total/(targetPerPod*float64(current)), tolerance) {
		return current
	}
	return int(math.Ceil(total / targetPerPod))
}

func withinTolerance(ratio, tolerance float64) bool { return math.Abs(1-ratio) <= tolerance }

// hpaBehavior is the HPA's default behaviour: no scale-up stabilisation, a
// scale-down stabilisation window, scale-up by the larger of +upPods and
// +upPercent per period, scale-down by up to 100 % per period.
type hpaBehavior struct {
	minReplicas, maxReplicas int
	downWindow               int // seconds
	period                   int // seconds
	upPods                   int
	upPercent                float64
}

// hpaState is what the HPA controller remembers of one HPA.
type hpaState struct {
	recommendations []timedCount
	changes         []timedCount // applied changes of the count, + or -
}

type timedCount struct{ at, count int }

// normalize turns a recommendation into the count the HPA applies: within
// the downWindow it takes the highest recommendation before scaling down;
// it scales up at most to the larger of +upPods and +upPercent of the count
// at the start of the period; it keeps within min and max.
func (s *hpaState) normalize(b hpaBehavior, now, current, desired int) int {
	s.recommendations = append(s.recommendations, timedCount{now, desired})
	s.recommendations = since(s.recommendations, now-b.downWindow)
	highest := desired
	for _, r := range s.recommendations {
		highest = max(highest, r.count)
	}
	next := max(current, desired) // scale-up stabilisation window: 0
	next = min(next, highest)

	s.changes = since(s.changes, now-b.period)
	start := current
	for _, c := range s.changes {
		start -= c.count
	}
	upLimit := max(start+b.upPods, int(math.Ceil(float64(start)*(1+b.upPercent/100))))
	upLimit = max(upLimit, current)
	next = min(next, upLimit, b.maxReplicas)
	next = max(next, b.minReplicas)
	if next != current {
		s.changes = append(s.changes, timedCount{now, next - current})
	}
	return next
}

// since keeps the entries after cutoff.
func since(entries []timedCount, cutoff int) []timedCount {
	i := 0
	for i < len(entries) && entries[i].at <= cutoff {
		i++
	}
	return entries[i:]
}
