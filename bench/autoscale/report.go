package main

import (
	"fmt"
	"io"
	"strings"
)

// Targets of ours against the oracle and the HPA set to hold the cap.
const (
	replicaMinutesLimit = 1.15 // x the oracle's, on every case
	actionsLimit        = 1.5  // x the HPA set to hold the cap's
	flashPeakLimit      = 1.25 // x the oracle's peak, on a flash crowd
)

// caseResult is every contender's figures on one case, in the order of
// contenders: ours, the HPA, the KEDA-style threshold, the HPA set to hold
// the cap.
type caseResult struct {
	scenario scenario
	oracle   result
	rows     []row
}

// Places of the contenders a target names in caseResult.rows.
const (
	oursRow = 0
	hpaRow  = 1
	holdRow = 3
)

type row struct {
	name string
	result
}

type target struct {
	claim string
	pass  bool
}

// targets are the case's goals for ours.
func targets(cr caseResult) []target {
	o, h, hold := cr.rows[oursRow].result, cr.rows[hpaRow].result, cr.rows[holdRow].result
	ratio := cr.oracle.ratio(o)
	var ts []target
	if cr.scenario.contoso {
		ts = append(ts, target{fmt.Sprintf("ours: zero minutes above the cap (%d)", o.minutesAboveCap), o.minutesAboveCap == 0})
	}
	ts = append(ts,
		target{fmt.Sprintf("ours: at most %.2fx the oracle's replica-minutes (%.2fx)", replicaMinutesLimit, ratio), ratio <= replicaMinutesLimit},
		// Ours cannot do better than none, even when the HPA has none.
		target{fmt.Sprintf("ours: fewer minutes above the cap than the HPA set to hold it, or none (%d against %d)", o.minutesAboveCap, hold.minutesAboveCap),
			o.minutesAboveCap < hold.minutesAboveCap || o.minutesAboveCap == 0},
		target{fmt.Sprintf("ours: at most %.1fx the scaling actions of the HPA set to hold the cap (%d against %d)", actionsLimit, o.actions, hold.actions),
			float64(o.actions) <= actionsLimit*float64(hold.actions)},
		target{fmt.Sprintf("ours: fewer replica-minutes than the HPA (%.0f against %.0f)", o.replicaMinutes, h.replicaMinutes), o.replicaMinutes < h.replicaMinutes},
		target{fmt.Sprintf("ours: no more minutes above the cap than the HPA (%d against %d)", o.minutesAboveCap, h.minutesAboveCap), o.minutesAboveCap <= h.minutesAboveCap},
	)
	if cr.scenario.flashCrowd {
		ts = append(ts,
			target{fmt.Sprintf("ours: fewer minutes above the cap than the HPA (%d against %d)", o.minutesAboveCap, h.minutesAboveCap), o.minutesAboveCap < h.minutesAboveCap},
			target{fmt.Sprintf("ours: a peak of at most %.2fx the oracle's (%d against %d)", flashPeakLimit, o.peakReplicas, cr.oracle.peakReplicas),
				float64(o.peakReplicas) <= flashPeakLimit*float64(cr.oracle.peakReplicas)},
		)
	}
	return ts
}

// ratio is r's replica-minutes over the oracle's.
func (oracle result) ratio(r result) float64 { return r.replicaMinutes / oracle.replicaMinutes }

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "MISS"
}

// writeCase prints one case as Markdown: its trace, the table, the targets.
func writeCase(w io.Writer, cr caseResult, c config) {
	sc := cr.scenario
	fmt.Fprintf(w, "#### %s\n\n", sc.title)
	fmt.Fprintf(w, "Trace: %s. %s.\n\n", sc.about, describeLoad(sc))
	fmt.Fprintf(w, "| Autoscaler | Replica-minutes | / oracle | Minutes above %.0f %% | Scaling actions | Peak replicas |\n", c.utilizationCap*100)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	line := func(name string, r result) {
		fmt.Fprintf(w, "| %s | %.0f | %.2f | %d | %d | %d |\n", name, r.replicaMinutes, cr.oracle.ratio(r), r.minutesAboveCap, r.actions, r.peakReplicas)
	}
	line("oracle (knows the future)", cr.oracle)
	for _, r := range cr.rows {
		line(r.name, r.result)
	}
	fmt.Fprintln(w)
	for _, t := range targets(cr) {
		fmt.Fprintf(w, "- %s %s\n", verdict(t.pass), t.claim)
	}
	fmt.Fprintln(w)
}

// writeModel prints the settings a run used.
func writeModel(w io.Writer, c config) {
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %d s steps; every autoscaler decides every %d s from Prometheus rates over %d s of scrapes every %d s (the newest %d s old); ",
		c.step, c.sync, c.rateWindow, c.scrape, c.scrapeAge)
	fmt.Fprintf(&b, "pods of %g core, ready %d s after they are created; scale-down window %d s; cap %.0f %% of the ready pods' cycles; %d..%d replicas; ",
		c.podCores, c.podStartDelay, c.stabilization, c.utilizationCap*100, c.minReplicas, c.maxReplicas)
	fmt.Fprintf(&b, "ours plans a rising load %d s ahead; HPA tolerance %.2f; KEDA-style threshold %.0f requests/s per pod.\n\n", scaleUpLead(c), c.tolerance, thresholdPerPod(c))
	fmt.Fprint(w, b.String())
}

// describeLoad gives a case's mean and peak requests/s, day by day.
func describeLoad(sc scenario) string {
	if sc.length <= int(day) {
		mean, peak := meanAndPeak(sc.load, 0, float64(sc.length))
		return fmt.Sprintf("Mean %.0f requests/s, peak %.0f", mean, peak)
	}
	var days []string
	for d := 0; d*int(day) < sc.length; d++ {
		from := float64(d) * day
		mean, peak := meanAndPeak(sc.load, from, min(from+day, float64(sc.length)))
		days = append(days, fmt.Sprintf("day %d mean %.0f requests/s, peak %.0f", d+1, mean, peak))
	}
	return "Day by day: " + strings.Join(days, "; ")
}
