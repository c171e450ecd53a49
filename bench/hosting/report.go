package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// report is what a run measured.
type report struct {
	o       options
	machine string

	baseline         baselineResult
	accepted, served time.Duration // from the first create of the timed routes
	sweep            time.Duration // the last check of every host through Envoy
	loadSmall        loadResult    // Envoy with one route per pool
	loadFull         loadResult    // the same Envoy with every route
	envoyRSS         int64
	configBytes      int
	virtualHosts     int
	changes          []time.Duration // sorted
	peakRSS          int64
	stalled          *stall // the routes missed the deadline (nil: they did not)
	reconciles       map[string]reconcileStats
}

// converged is the operator's time until every route is Accepted and served.
func (r *report) converged() time.Duration { return max(r.accepted, r.served) }

func (r *report) ratio() float64 {
	if r.baseline.wall == 0 {
		return 0
	}
	return r.converged().Seconds() / r.baseline.wall.Seconds()
}

// percentile of the sorted change times (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// failures are what makes the run's figures meaningless: requests through
// Envoy not answered by their pool. A missed target is reported in the
// table, as bench/controlplane does, not a failure.
func (r *report) failures() error {
	if r.stalled != nil {
		return fmt.Errorf("not every route was Accepted and served within %s: %s", r.o.timeout, r.stalled)
	}
	for _, l := range []loadResult{r.loadSmall, r.loadFull} {
		if l.failures > 0 {
			return fmt.Errorf("%d of %d requests through Envoy were not answered by their pool", l.failures, l.requests)
		}
	}
	return nil
}

func (r *report) String() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w := r.o.w
	p("Shared hosting: %d HTTPRoutes (one host each) in %d namespaces, one Gateway, %d pools", w.routes, w.namespaces, w.pools)
	p("machine: %s", r.machine)
	p("")
	timed := w.routes - w.pools
	if r.o.baseline {
		p("%-52s %10s", fmt.Sprintf("bare client: %d routes created + status written", timed), secs(r.baseline.wall))
	}
	if r.stalled != nil {
		p("operator: DEADLINE PASSED, %s", r.stalled)
	}
	if r.accepted > 0 {
		p("%-52s %10s", fmt.Sprintf("operator: %d routes Accepted", timed), secs(r.accepted))
	}
	if r.served > 0 {
		p("%-52s %10s", fmt.Sprintf("operator: %d routes served through Envoy", timed), secs(r.served))
		p("%-52s %10s", "  (last check of every host through Envoy took)", secs(r.sweep))
	}
	switch {
	case r.o.baseline && r.stalled != nil:
		p("%-52s %8.2fx  (target <= %.0fx) MISSED", "ratio, both done / bare client: over", r.stalled.after.Seconds()/r.baseline.wall.Seconds(), targetRatio)
	case r.o.baseline:
		p("%-52s %9.2fx  (target <= %.0fx) %s", "ratio, both done / bare client", r.ratio(), targetRatio, verdict(r.ratio() <= targetRatio))
	}
	p("")
	if len(r.changes) > 0 {
		if r.stalled != nil {
			p("(every route served, while the operator still wrote their statuses:)")
		}
		p50, p99 := percentile(r.changes, 50), percentile(r.changes, 99)
		p("%-52s %10s", fmt.Sprintf("one route's change served, p50 of %d", len(r.changes)), ms(p50))
		p("%-52s %10s  (target < %s) %s", fmt.Sprintf("one route's change served, p99 of %d", len(r.changes)), ms(p99), targetChange, verdict(p99 <= targetChange))
		p("%-52s %10s", "  slowest", ms(r.changes[len(r.changes)-1]))
		p("")
	}
	p("%-52s %7d MiB", "Envoy resident memory, at the end", r.envoyRSS>>20)
	p("%-52s %7.1f MiB", "Envoy /config_dump", float64(r.configBytes)/(1<<20))
	p("%-52s %10d", "virtual hosts in Envoy's config (domain lists)", r.virtualHosts)
	p("%-52s %7d MiB  (target < %d MiB) %s", "operator peak resident memory (VmHWM)", r.peakRSS>>20, targetRSS>>20, verdict(r.peakRSS <= targetRSS))
	for _, c := range slices.Sorted(maps.Keys(r.reconciles)) {
		s := r.reconciles[c]
		p("%-52s %10d  (%.1f s in all, %.0f ms each)", "manager reconciles: "+c, s.count, s.seconds, 1000*s.seconds/float64(max(s.count, 1)))
	}
	p("")
	p("%-52s %10.0f  (%d failed)", fmt.Sprintf("requests/s through Envoy, %d routes", w.pools), r.loadSmall.rps(), r.loadSmall.failures)
	if r.loadFull.requests == 0 {
		return b.String()
	}
	p("%-52s %10.0f  (%d failed)", fmt.Sprintf("requests/s through Envoy, %d routes", w.routes), r.loadFull.rps(), r.loadFull.failures)
	if r.loadSmall.requests > 0 {
		p("%-52s %9.2fx", "loaded / 10 routes", r.loadFull.rps()/r.loadSmall.rps())
	}
	return b.String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
func ms(d time.Duration) string   { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
