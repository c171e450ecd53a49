package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// A tuning step changes one setting, and its effect (a few percent) is
// smaller than the swings that other work on a shared machine causes between
// two measurements taken seconds apart. So a step is measured against the
// step before it at the same time: two clients load the two frontends
// together, both hops on the same processor (-pin). Whatever else runs then slows
// both alike, the processor's time is split evenly between the two hops, and
// the ratio of their requests/s is the inverse ratio of their CPU cost per
// request.

// stepPair is one step against the one before it, over the rounds.
type stepPair struct {
	before, after string
	rounds        []pairSample
}

type pairSample struct {
	before, after sample
}

// benchSteps measures each route against the one before it, pairwise and
// simultaneously, round after round.
func benchSteps(ctx context.Context, o options, routes []*route, pool *benchkit.Server, in loadInput, w workload) ([]*stepPair, error) {
	pairs := make([]*stepPair, len(routes)-1)
	for i := range pairs {
		pairs[i] = &stepPair{before: routes[i].name, after: routes[i+1].name}
	}
	for round := range o.rounds {
		for k := range pairs {
			i := (k + round) % len(pairs)
			if err := benchkit.WaitQuiet(ctx, o.quietBelow, o.quietWait); err != nil {
				return pairs, err
			}
			before, after, err := measurePair(ctx, o.client, routes[i], routes[i+1], pool, in, round%2 == 0)
			if err != nil {
				return pairs, err
			}
			pairs[i].rounds = append(pairs[i].rounds, pairSample{before, after})
			logf("%s, round %d/%d, %s: %.0f req/s against %.0f for %s", w.name, round+1, o.rounds,
				routes[i+1].name, after.requestsPerSecond, before.requestsPerSecond, routes[i].name)
		}
	}
	return pairs, nil
}

// measurePair loads two routes at once, each with its own client.
func measurePair(ctx context.Context, c client, a, b *route, pool *benchkit.Server, in loadInput, first bool) (sample, sample, error) {
	var wg sync.WaitGroup
	var sa, sb sample
	var errA, errB error
	wg.Add(2)
	runA := func() { defer wg.Done(); sa, errA = measureHop(ctx, c, a, in) }
	runB := func() { defer wg.Done(); sb, errB = measureHop(ctx, c, b, in) }
	// Which client starts first alternates over the rounds.
	if first {
		go runA()
		go runB()
	} else {
		go runB()
		go runA()
	}
	wg.Wait()
	for _, err := range []error{errA, errB, pool.Exited()} {
		if err != nil {
			return sa, sb, err
		}
	}
	return sa, sb, nil
}

// measureHop is measure without the pool's and the machine's CPU, which two
// simultaneous runs share.
func measureHop(ctx context.Context, c client, r *route, in loadInput) (sample, error) {
	before, err := r.front.CPUTime()
	if err != nil {
		return sample{}, err
	}
	res, clientCPU, err := c.run(ctx, r, in, c.duration)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", r.name, err)
	}
	after, err := r.front.CPUTime()
	if err != nil {
		return sample{}, err
	}
	if err := r.front.Exited(); err != nil {
		return sample{}, err
	}
	n := time.Duration(res.requests)
	return sample{
		requestsPerSecond: res.requestsPerSecond,
		p50:               res.p50,
		p99:               res.p99,
		frontCPU:          (after - before) / n,
		clientCPU:         clientCPU / n,
	}, nil
}

// gain is the median over the rounds of after's requests/s over before's.
func (p *stepPair) gain() float64 {
	return p.medianRatio(func(s sample) float64 { return s.requestsPerSecond })
}

// cpuChange is the median over the rounds of after's hop CPU per request
// over before's.
func (p *stepPair) cpuChange() float64 {
	return p.medianRatio(func(s sample) float64 { return float64(s.frontCPU) })
}

func (p *stepPair) medianRatio(figure func(sample) float64) float64 {
	var ratios []float64
	for _, r := range p.rounds {
		if figure(r.before) > 0 {
			ratios = append(ratios, figure(r.after)/figure(r.before))
		}
	}
	return benchkit.Median(ratios)
}

// stepsMarkdown is the table of a run of tuning steps.
func stepsMarkdown(pairs []*stepPair) string {
	var b strings.Builder
	b.WriteString("| Step | Against | Req/s, both loaded at once (median) | Gain in req/s | Hop CPU per request | Change | Gains by round |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---|\n")
	for _, p := range pairs {
		var before, after, cpuBefore, cpuAfter []float64
		var gains []string
		for _, r := range p.rounds {
			before = append(before, r.before.requestsPerSecond)
			after = append(after, r.after.requestsPerSecond)
			cpuBefore = append(cpuBefore, float64(r.before.frontCPU))
			cpuAfter = append(cpuAfter, float64(r.after.frontCPU))
			gains = append(gains, fmt.Sprintf("%+.0f", (r.after.requestsPerSecond/r.before.requestsPerSecond-1)*100))
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f vs %.0f | %+.1f %% | %s vs %s | %+.1f %% | %s |\n",
			p.after, p.before, benchkit.Median(after), benchkit.Median(before), (p.gain()-1)*100,
			benchkit.Micros(time.Duration(benchkit.Median(cpuAfter))), benchkit.Micros(time.Duration(benchkit.Median(cpuBefore))), (p.cpuChange()-1)*100,
			strings.Join(gains, ", "))
	}
	return b.String()
}
