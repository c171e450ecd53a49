package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// A run of features (-features) measures what each of our filters and
// settings costs alone: the farm as rendered against the same farm with
// only that feature switched off, and against the minimal Envoy (all of
// them off at once). Each pair is loaded at once, both hops on the same
// processor, as tuning steps are (steps.go): a feature costs a few percent,
// less than the swings between two measurements seconds apart on a shared
// machine, while two hops loaded together share whatever else runs.

// feature is one of the things the renderer adds to Envoy for the farm,
// and the bench-side knobs that take it away again.
type feature struct {
	name string
	off  []setting
}

// features, in the order of the table. A control pair (nothing switched
// off) measures the method's own noise.
var features = mustFeatures([][2]string{
	{"control: nothing switched off", "control"},
	{"access log: a JSON line per request (stdout)", "no-log-line"},
	{"header_to_metadata: the log's path and worker pod", "no-header-to-metadata"},
	{"request IDs (x-request-id, generated per request)", "no-request-id"},
	{"header edits: X-Real-IP added, inside headers removed", "no-header-edits"},
	{"cookie affinity (stateful session filter)", "no-affinity"},
	{"queue circuit breakers", "no-queue-breakers"},
	{"queue-timeout filter (custom_response)", "no-queue-timeout-filter"},
	{"local replies: the 503 bodies of a full queue, no worker", "no-local-replies"},
	{"GET/HEAD and WebSocket routes (header matchers)", "no-method-route"},
	{"retry policy", "no-retry"},
	{"path normalization, merged slashes", "no-normalize"},
	{"X-Forwarded-For appended", "skip-xff"},
	{"overload manager (connection cap)", "no-overload"},
	{everyFeature, ""}, // filled in by mustFeatures
})

// everyFeature names the pair of the farm against itself with every
// feature above switched off at once: against the minimal Envoy's pair, it
// shows what the list leaves out.
const everyFeature = "every feature above at once"

// allOfOurs names the pair of the farm against the minimal Envoy.
const allOfOurs = "all of them: the minimal Envoy in place of the farm"

func mustFeatures(list [][2]string) []feature {
	out := make([]feature, len(list))
	var every []string
	for _, f := range list[1:] { // not the control
		if f[1] != "" {
			every = append(every, f[1])
		}
	}
	for i, f := range list {
		if f[0] == everyFeature {
			f[1] = strings.Join(every, ",")
		}
		settings, err := parseSettings(f[1])
		if err != nil {
			panic(fmt.Sprintf("feature %q: %v", f[0], err))
		}
		out[i] = feature{name: f[0], off: settings}
	}
	return out
}

// featurePairs pairs, on one protocol, each farm path without a feature
// and the minimal Envoy (before) with the farm as rendered (after).
func featurePairs(routes []*route) (pairs []*stepPair, others []*route, full *route, err error) {
	i := slices.IndexFunc(routes, func(r *route) bool { return r.farm && r.feature == "" })
	if i < 0 {
		return nil, nil, nil, fmt.Errorf("no farm as rendered among %d routes", len(routes))
	}
	full = routes[i]
	for _, r := range routes {
		if r.farm && r.feature != "" {
			others = append(others, r)
			pairs = append(pairs, &stepPair{before: r.feature, after: full.name})
		}
	}
	if i := slices.IndexFunc(routes, func(r *route) bool { return r.minimal }); i >= 0 {
		others = append(others, routes[i]) // last in the table
		pairs = append(pairs, &stepPair{before: allOfOurs, after: full.name})
	}
	return pairs, others, full, nil
}

// benchFeatures measures every pair, round after round, each round
// starting with another pair.
func benchFeatures(ctx context.Context, o options, routes []*route, pool *benchkit.Server, in loadInput, w workload) ([]*stepPair, error) {
	pairs, others, full, err := featurePairs(routes)
	if err != nil {
		return nil, err
	}
	for round := range o.rounds {
		for k := range pairs {
			i := (k + round) % len(pairs)
			if err := benchkit.WaitQuiet(ctx, o.quietBelow, o.quietWait); err != nil {
				return pairs, err
			}
			off, on, err := measurePair(ctx, o.client, others[i], full, pool, in, round%2 == 0)
			if err != nil {
				return pairs, err
			}
			pairs[i].rounds = append(pairs[i].rounds, pairSample{before: off, after: on})
			logf("%s, %s, round %d/%d, %s: hop CPU %s on, %s off", w.name, full.proto, round+1, o.rounds,
				pairs[i].before, benchkit.Micros(on.frontCPU), benchkit.Micros(off.frontCPU))
		}
	}
	return pairs, nil
}

// featuresMarkdown is the table of a run of features: what the farm's hop
// spends per request with each feature (as rendered) and without it.
func featuresMarkdown(pairs []*stepPair) string {
	var b strings.Builder
	b.WriteString("| Feature (switched off alone) | Hop CPU per request: on | off | Delta | Req/s, on against off | Deltas by round |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|\n")
	for _, p := range pairs {
		var on, off []float64
		var deltas []string
		for _, r := range p.rounds {
			on = append(on, float64(r.after.frontCPU))
			off = append(off, float64(r.before.frontCPU))
			if r.before.frontCPU > 0 {
				deltas = append(deltas, fmt.Sprintf("%+.0f", (float64(r.after.frontCPU)/float64(r.before.frontCPU)-1)*100))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %+.1f %% | %+.1f %% | %s |\n", p.before,
			benchkit.Micros(time.Duration(benchkit.Median(on))), benchkit.Micros(time.Duration(benchkit.Median(off))),
			(p.cpuChange()-1)*100, (p.gain()-1)*100, strings.Join(deltas, ", "))
	}
	return b.String()
}
