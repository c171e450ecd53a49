// Package autoscale decides how many workers an application pool runs, from
// its measured cycles per request (internal/capacity), as the IIS 6.0 case
// study plans capacity: scale out at once when the load needs more cycles
// than the workers offer at the target utilisation, scale in only after the
// need has stayed lower for a stabilisation window (clearly lower, or for
// longer), and never scale on figures that are unknown. Pure: the
// controller feeds it observations and applies its decisions; the
// autoscaling benchmark replays traces through it.
package autoscale

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"webfarm.dev/operator/internal/capacity"
)

// Policy is a pool's autoscaling settings, resolved.
type Policy struct {
	MinReplicas, MaxReplicas int32
	// TargetUtilization is the share of the workers' cycles the load may
	// use, in (0, 1] (the case study's 30 % policy is 0.30).
	TargetUtilization float64
	// ForecastRequestsPerSecond is a load to plan for even before it comes
	// (an announced peak); 0: none.
	ForecastRequestsPerSecond float64
	StabilizationWindow       time.Duration
	// FallbackReplicas is the count while metrics are unavailable (never
	// lower than the current count); nil holds the current count.
	FallbackReplicas *int32
	// ReplicaCores is the CPU one worker may use (its limit, in cores).
	ReplicaCores float64
	// DefaultMHz is the clock rate assumed for a worker whose node says none,
	// and for new workers when no worker reports.
	DefaultMHz float64
	// ScaleUpLead is how long a measured rise takes to be served by new
	// workers: the metrics' lag, a sync period and the pod start delay.
	// While the load rises, the pool is planned for the load it reaches by
	// then if it keeps rising (a reactive autoscaler is otherwise always one
	// start delay behind a rising load), as far as both its rise over the
	// last ScaleUpLead and its trend over the last trendLeads of them
	// support. 0: plan for the measured load only.
	ScaleUpLead time.Duration
	// Replicas names what is scaled in the reasons ("frontends"); empty:
	// "workers".
	Replicas string
}

// one is what the policy's reasons call one replica.
func (p Policy) one() string { return strings.TrimSuffix(p.noun(), "s") }

// noun is what the policy's reasons call replicas.
func (p Policy) noun() string {
	if p.Replicas == "" {
		return "workers"
	}
	return p.Replicas
}

// Observation is one reading of a pool's metrics over a window.
type Observation struct {
	At                time.Time
	RequestsPerSecond float64
	// Workers are the ready workers' CPU use and their nodes' clock rates.
	Workers []capacity.Worker
	// Complete: every ready worker and every frontend was read. Scaling in
	// needs complete data; scaling out does not (a partial reading only
	// understates the load).
	Complete bool
	// Err: the metrics are unavailable (a failed query, no series, NaN).
	Err error
}

// Measurement is what a decision was based on.
type Measurement struct {
	RequestsPerSecond float64
	// PlannedRequestsPerSecond is the load planned for: the measured one
	// plus the rise expected over the next ScaleUpLead.
	PlannedRequestsPerSecond float64
	CPUCores                 float64
	MegacyclesPerRequest     float64
	RequiredMHz              float64
}

// Decision is the replica count a pool should run and why.
type Decision struct {
	Replicas    int32
	Recommended int32 // from this observation alone; equals Replicas unless held
	Measured    *Measurement
	// Scaled: Replicas differs from the current count.
	Scaled bool
	Reason string
	// MetricsUnavailable: the observation gave no figure; Replicas held.
	MetricsUnavailable bool
}

// errNoWorkerMeasured: a pool gets requests but none of its workers was
// measured, and no earlier cost is known.
var errNoWorkerMeasured = errors.New("requests but no worker measured: cycles per request unknown")

// State is what the autoscaler remembers of a pool between observations.
type State struct {
	since time.Time // first observation: the window is complete after it
	// recent recommendations within marginWindows stabilisation windows,
	// oldest first
	recent []recommendation
	// lastCost: the last known megacycles per request, for planning a
	// forecast while the pool serves nothing.
	lastCost float64
	// loads within the last trendLeads x ScaleUpLead, oldest first
	loads []measuredLoad
}

type measuredLoad struct {
	at                time.Time
	requestsPerSecond float64
}

type recommendation struct {
	at time.Time
	// replicas for the load measured; withMargin for it and scaleInMargin
	// more
	replicas, withMargin int32
}

// Decide gives the replica count for a pool now running current workers.
func (s *State) Decide(p Policy, current int32, o Observation) Decision {
	if s.since.IsZero() {
		s.since = o.At
	}
	m, recommended, err := s.recommend(p, o)
	if err != nil {
		hold := max(current, p.MinReplicas)
		if p.FallbackReplicas != nil {
			hold = max(hold, *p.FallbackReplicas)
		}
		hold = min(hold, max(current, p.MaxReplicas))
		return decision(current, hold, hold, nil, true, fmt.Sprintf("metrics unavailable (%v): holding %d %s", err, hold, p.noun()))
	}
	margined := recommended
	if r, err := replicasFor(m.RequiredMHz*(1+scaleInMargin), p, o.Workers); err == nil {
		margined = max(recommended, r)
	}
	s.remember(recommendation{at: o.At, replicas: recommended, withMargin: margined}, marginWindows*p.StabilizationWindow)
	why := fmt.Sprintf("%.1f requests/s x %.2f megacycles/request at %.0f %% target needs %.0f MHz: %d %s",
		m.RequestsPerSecond, m.MegacyclesPerRequest, p.TargetUtilization*100, m.RequiredMHz, recommended, p.noun())
	if m.PlannedRequestsPerSecond > m.RequestsPerSecond {
		why = fmt.Sprintf("rising to %.1f requests/s within %s; ", m.PlannedRequestsPerSecond, p.ScaleUpLead) + why
	}

	switch {
	case recommended >= current:
		return decision(current, recommended, recommended, m, false, why)
	case current > p.MaxReplicas:
		// Above a lowered maximum: down to it at once, no lower until stable.
		return decision(current, p.MaxReplicas, recommended, m, false, why+fmt.Sprintf("; down to maxReplicas %d", p.MaxReplicas))
	case !o.Complete:
		return decision(current, current, recommended, m, false, why+"; holding: not every "+p.one()+" was measured")
	case o.At.Sub(s.since) < p.StabilizationWindow:
		return decision(current, current, recommended, m, false, why+"; holding until the stabilisation window has passed")
	}
	stable, which := s.scaleInTo(o.At, p.StabilizationWindow)
	if stable >= current {
		return decision(current, current, recommended, m, false, why+fmt.Sprintf("; holding: %d is %s", stable, which))
	}
	return decision(current, stable, recommended, m, false, why+fmt.Sprintf("; %d is %s", stable, which))
}

// Report is the capacity plan of a pool of fixed size: the figures and the
// workers the load needs, by the same rules as Decide (unknown figures give
// none, a pool without load is planned at its last known cost), but the
// decision keeps the pool's current workers: the recommendation is a report
// for the person who sizes the pool.
func (s *State) Report(p Policy, current int32, o Observation) Decision {
	m, recommended, err := s.recommend(p, o)
	if err != nil {
		return decision(current, current, current, nil, true,
			fmt.Sprintf("metrics unavailable (%v); keeping its %d %s", err, current, p.noun()))
	}
	why := fmt.Sprintf("%.1f requests/s x %.2f megacycles/request at %.0f %% target needs %.0f MHz: %d %s recommended; a report only: keeping its fixed %d",
		m.RequestsPerSecond, m.MegacyclesPerRequest, p.TargetUtilization*100, m.RequiredMHz, recommended, p.noun(), current)
	if !o.Complete {
		why += "; not every " + p.one() + " was measured: the figures may understate the load"
	}
	return decision(current, current, recommended, m, false, why)
}

// A pool scales in to the most workers recommended within the
// stabilisation window for its load and scaleInMargin more, or, once the
// need has stayed below its count for marginWindows windows, for its load
// alone. A dip shorter than the window moves nothing; a load whose noise
// swings around a whole number of workers keeps the higher number for a
// while instead of scaling in and out with every swing (on the benchmark's
// noisy days this cuts the scaling actions and the minutes above the cap
// by half or more, for 2 to 6 % more replica-minutes); and a load that has
// really settled just below a count still gets it.
const (
	scaleInMargin = 0.15
	marginWindows = 3
)

// scaleInTo is the count a pool may scale in to now, and which
// recommendations gave it.
func (s *State) scaleInTo(now time.Time, window time.Duration) (int32, string) {
	margined, settled := int32(math.MinInt32), int32(math.MinInt32)
	for _, r := range s.recent {
		if now.Sub(r.at) <= window {
			margined = max(margined, r.withMargin)
		}
		settled = max(settled, r.replicas)
	}
	if margined <= settled {
		return margined, fmt.Sprintf("the most recommended within the last %s with a %.0f %% margin", window, scaleInMargin*100)
	}
	return settled, fmt.Sprintf("the most recommended within the last %s", marginWindows*window)
}

func decision(current, replicas, recommended int32, m *Measurement, unavailable bool, reason string) Decision {
	return Decision{Replicas: replicas, Recommended: recommended, Measured: m, Scaled: replicas != current, Reason: reason, MetricsUnavailable: unavailable}
}

// recommend turns an observation into the replicas it needs on its own.
func (s *State) recommend(p Policy, o Observation) (*Measurement, int32, error) {
	if o.Err != nil {
		return nil, 0, o.Err
	}
	m := &Measurement{RequestsPerSecond: o.RequestsPerSecond, PlannedRequestsPerSecond: s.planned(p.ScaleUpLead, o)}
	for _, w := range o.Workers {
		m.CPUCores += w.Cores
	}
	cost, err := capacity.MegacyclesPerRequest(withClocks(o.Workers, p.DefaultMHz), o.RequestsPerSecond)
	switch {
	case err == nil && len(o.Workers) == 0:
		// Requests but no worker measured (all starting, or none ready):
		// the cost is unknown, not zero.
		if s.lastCost == 0 {
			return nil, 0, errNoWorkerMeasured
		}
		cost = s.lastCost
	case err == nil:
		s.lastCost = cost
	case errors.Is(err, capacity.ErrNoRequests):
		// No load: plan the forecast at the last known cost, if any.
		cost = s.lastCost
	default:
		return nil, 0, err
	}
	m.MegacyclesPerRequest = cost
	required, err := capacity.RequiredMegahertz(p.ForecastRequestsPerSecond, m.PlannedRequestsPerSecond, cost, p.TargetUtilization)
	if err != nil {
		return nil, 0, err
	}
	m.RequiredMHz = required
	replicas, err := replicasFor(required, p, o.Workers)
	if err != nil {
		return nil, 0, err
	}
	return m, replicas, nil
}

// trendLeads is how many ScaleUpLeads the trend of the load is fitted over:
// enough readings that minute-to-minute noise mostly cancels out of the
// fit, few enough to follow an evening's rise.
const trendLeads = 5

// planned is the load to plan for: the measured requests/s plus, while they
// rise, their rise over the next ScaleUpLead. The rise planned is the
// smaller of two estimates: the rise since a lead ago (a straight line
// through that reading and this one) and the least-squares trend of the
// readings over trendLeads leads, less its standard error. On a noisy load
// the first swings with every minute's noise, and the trend does not; after
// a step the trend still slopes for minutes, and the rise since a lead ago
// is over once the step is measured. A fall plans for the measured load:
// scaling in waits for its window.
func (s *State) planned(lead time.Duration, o Observation) float64 {
	if lead <= 0 || !valid(o.RequestsPerSecond) {
		return o.RequestsPerSecond
	}
	s.loads = append(s.loads, measuredLoad{at: o.At, requestsPerSecond: o.RequestsPerSecond})
	cut := 0
	for cut < len(s.loads) && o.At.Sub(s.loads[cut].at) > trendLeads*lead {
		cut++
	}
	s.loads = s.loads[cut:]
	sinceLead := o.RequestsPerSecond
	for _, l := range s.loads {
		if o.At.Sub(l.at) <= lead {
			sinceLead -= l.requestsPerSecond
			break
		}
	}
	rise := min(sinceLead, trendPerSecond(s.loads)*lead.Seconds())
	return o.RequestsPerSecond + max(0, rise)
}

// trendPerSecond is the least-squares slope of the loads (requests/s per
// second) less its standard error: a slope that noise alone could give
// counts as none. Fewer than three loads give no trend.
func trendPerSecond(loads []measuredLoad) float64 {
	n := float64(len(loads))
	if n < 3 {
		return 0
	}
	last := loads[len(loads)-1].at
	var meanT, meanX float64
	for _, l := range loads {
		meanT += l.at.Sub(last).Seconds() / n
		meanX += l.requestsPerSecond / n
	}
	var stt, stx float64
	for _, l := range loads {
		t := l.at.Sub(last).Seconds() - meanT
		stt += t * t
		stx += t * (l.requestsPerSecond - meanX)
	}
	if stt == 0 {
		return 0
	}
	slope := stx / stt
	var residuals float64
	for _, l := range loads {
		r := l.requestsPerSecond - meanX - slope*(l.at.Sub(last).Seconds()-meanT)
		residuals += r * r
	}
	return slope - math.Sqrt(residuals/(n-2)/stt)
}

// replicasFor is how many workers give the required megahertz. The ready
// workers count at their own nodes' clock rates and new ones at the pool's
// mean. Fewer workers than now are counted as the slowest of them: which
// workers a scale-in removes is the ReplicaSet's choice, and on nodes of
// mixed clock rates planning the remaining ones at the mean would leave too
// few cycles whenever it removes a fast one.
func replicasFor(required float64, p Policy, workers []capacity.Worker) (int32, error) {
	if !valid(required) {
		return 0, fmt.Errorf("required %v MHz: %w", required, capacity.ErrInvalid)
	}
	offered := make([]float64, len(workers))
	for i, w := range withClocks(workers, p.DefaultMHz) {
		offered[i] = p.ReplicaCores * w.MHz
	}
	slices.Sort(offered)
	enough := required * (1 - 1e-9) // a rounding excess starts no worker
	kept, sum := 0, 0.0
	for kept < len(offered) && sum < enough {
		sum += offered[kept]
		kept++
	}
	if sum < enough {
		more, err := capacity.Replicas(required-sum, p.ReplicaCores*meanClock(workers, p.DefaultMHz), 0, math.MaxInt32-int32(kept))
		if err != nil {
			return 0, err
		}
		kept += int(more)
	}
	return min(max(int32(kept), p.MinReplicas), p.MaxReplicas), nil
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// withClocks gives workers whose node names no clock rate the default.
func withClocks(workers []capacity.Worker, defaultMHz float64) []capacity.Worker {
	out := make([]capacity.Worker, len(workers))
	for i, w := range workers {
		if w.MHz == 0 {
			w.MHz = defaultMHz
		}
		out[i] = w
	}
	return out
}

// meanClock is the clock rate a new worker is expected to get: the mean of
// the pool's workers' nodes, as the scheduler spreads them alike.
func meanClock(workers []capacity.Worker, defaultMHz float64) float64 {
	if len(workers) == 0 {
		return defaultMHz
	}
	var sum float64
	for _, w := range withClocks(workers, defaultMHz) {
		sum += w.MHz
	}
	return sum / float64(len(workers))
}

// remember keeps a recommendation and those of the last keep.
func (s *State) remember(r recommendation, keep time.Duration) {
	s.recent = append(s.recent, r)
	cut := 0
	for cut < len(s.recent) && r.at.Sub(s.recent[cut].at) > keep {
		cut++
	}
	s.recent = s.recent[cut:]
}
