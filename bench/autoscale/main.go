// Command autoscale is the autoscaling benchmark: a deterministic
// simulation that replays the seed's Contoso traffic (and a mixed farm, a
// flash crowd, a dearer release, and the same days with seeded noise and
// bursts, on same and mixed nodes) through the operator's autoscaler, the
// Kubernetes HPA's algorithm on CPU and a KEDA-style requests/s threshold,
// all reading the same Prometheus-like measurements, and compares them with
// an oracle that knows the future. See bench/README.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	c, only, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := bench(os.Stdout, c, only); err != nil {
		fmt.Fprintln(os.Stderr, "simulation error:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, map[string]bool, error) {
	c := defaults()
	fs := flag.NewFlagSet("autoscale", flag.ContinueOnError)
	step := fs.Duration("step", seconds(c.step), "simulation time step")
	sync := fs.Duration("sync", seconds(c.sync), "every autoscaler's sync period")
	scrape := fs.Duration("scrape", seconds(c.scrape), "Prometheus scrape interval")
	window := fs.Duration("rate-window", seconds(c.rateWindow), "window of rate() in every measurement")
	delay := fs.Duration("pod-start-delay", seconds(c.podStartDelay), "from a pod's creation to its readiness")
	stabilization := fs.Duration("stabilization", seconds(c.stabilization), "scale-down stabilisation window of ours and of the HPA")
	fs.Float64Var(&c.podCores, "pod-cores", c.podCores, "each pod's CPU limit (and the HPA's request), in cores")
	fs.IntVar(&c.maxReplicas, "max-replicas", c.maxReplicas, "every autoscaler's maximum")
	cases := fs.String("cases", "", "comma-separated cases to run (default all): "+strings.Join(caseKeys(), ","))
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	for _, d := range []struct {
		into *int
		from time.Duration
	}{{&c.step, *step}, {&c.sync, *sync}, {&c.scrape, *scrape}, {&c.rateWindow, *window}, {&c.podStartDelay, *delay}, {&c.stabilization, *stabilization}} {
		if d.from%time.Second != 0 {
			return c, nil, fmt.Errorf("%s is not a whole number of seconds", d.from)
		}
		*d.into = int(d.from / time.Second)
	}
	// The newest scrape is a third of an interval old when a controller
	// reads, rounded to the step.
	if c.step > 0 {
		c.scrapeAge = c.scrape / 3 / c.step * c.step
	}
	if err := c.validate(); err != nil {
		return c, nil, err
	}
	only := map[string]bool{}
	if *cases != "" {
		known := map[string]bool{}
		for _, k := range caseKeys() {
			known[k] = true
		}
		for k := range strings.SplitSeq(*cases, ",") {
			if !known[k] {
				return c, nil, fmt.Errorf("unknown case %q (have %s)", k, strings.Join(caseKeys(), ","))
			}
			only[k] = true
		}
	}
	return c, only, nil
}

func seconds(s int) time.Duration { return time.Duration(s) * time.Second }

func caseKeys() []string {
	var keys []string
	for _, sc := range scenarios() {
		keys = append(keys, sc.key)
	}
	return keys
}

// bench runs the cases (all when only is empty) and prints the report.
func bench(w io.Writer, c config, only map[string]bool) error {
	writeModel(w, c)
	for _, sc := range scenarios() {
		if len(only) > 0 && !only[sc.key] {
			continue
		}
		cr, err := runCase(sc, c)
		if err != nil {
			return err
		}
		writeCase(w, cr, c)
	}
	return nil
}

// runCase runs the oracle and every contender on one case, each on a pool
// of its own under the same trace and from the same start.
func runCase(sc scenario, c config) (caseResult, error) {
	need := needs(sc, c)
	initial := initialReplicas(need, c)
	cr := caseResult{scenario: sc}
	var err error
	cr.oracle, err = simulate(sc, c, &oracle{plan: oraclePlan(need, c.podStartDelay/c.step), step: c.step}, c.step, initial)
	if err != nil {
		return cr, err
	}
	for _, nc := range contenders(c) {
		r, err := simulate(sc, c, nc.controller, c.sync, initial)
		if err != nil {
			return cr, err
		}
		cr.rows = append(cr.rows, row{name: nc.name, result: r})
	}
	return cr, nil
}
