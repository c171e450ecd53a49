package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// A trace is a quantity at each moment of a run, in seconds from its start:
// the requests per second offered to a pool, or what one request costs.
type trace func(at float64) float64

// knot is a trace's value at one moment; a piecewise-linear trace joins
// its knots with straight lines.
type knot struct{ at, value float64 }

// piecewiseLinear joins knots (in order of time) with straight lines and
// holds the first and last values beyond them.
func piecewiseLinear(knots []knot) trace {
	return func(at float64) float64 {
		i := sort.Search(len(knots), func(i int) bool { return knots[i].at > at })
		switch {
		case i == 0:
			return knots[0].value
		case i == len(knots):
			return knots[len(knots)-1].value
		}
		a, b := knots[i-1], knots[i]
		return a.value + (b.value-a.value)*(at-a.at)/(b.at-a.at)
	}
}

func constant(v float64) trace { return func(float64) float64 { return v } }

// product is a trace scaled by another (a day's shape by a campaign's or a
// flash crowd's multiple).
func product(a, b trace) trace { return func(at float64) float64 { return a(at) * b(at) } }

const (
	hour = 3600.0
	day  = 24 * hour
)

// contosoHourly is the Contoso site's load at each clock hour, 00:00 to
// 23:00, in requests/s: a night trough, a working day near 100, the evening
// peak of 300 from 18:00 to 23:00. It averages 139 requests/s, the case
// study's 12,000,000 requests a day.
var contosoHourly = [24]float64{
	180, 100, 60, 40, 30, 30, 40, 55, 75, 90, 95, 100,
	100, 100, 95, 95, 100, 150, 300, 300, 300, 300, 300, 300,
}

// startHour is the clock hour a run starts at: the trough, when every
// autoscaler can start right-sized.
const startHour = 4

// contosoDays is consecutive days of the Contoso shape, each from 04:00 to
// 04:00 and multiplied by its own factor (2 for the advertising campaign).
// A day's factor comes in over the last hour of the night before, 03:00 to
// 04:00, when the load is lowest.
func contosoDays(factors ...float64) trace {
	var knots []knot
	for d, f := range factors {
		for h := range 24 {
			clock := (startHour + h) % 24
			knots = append(knots, knot{at: float64(d)*day + float64(h)*hour, value: f * contosoHourly[clock]})
		}
	}
	last := factors[len(factors)-1]
	knots = append(knots, knot{at: float64(len(factors)) * day, value: last * contosoHourly[startHour]})
	return piecewiseLinear(knots)
}

// clock is the moment of a run at which the clock of its first day shows
// hh:mm.
func clock(hh, mm int) float64 {
	at := float64(hh-startHour)*hour + float64(mm)*60
	if at < 0 {
		at += day
	}
	return at
}

// surge is a multiple of the load that rises from 1 to factor over rise
// seconds from start, holds for hold seconds and falls back over rise.
func surge(start, rise, hold, factor float64) trace {
	return piecewiseLinear([]knot{
		{start, 1}, {start + rise, factor}, {start + rise + hold, factor}, {start + 2*rise + hold, 1},
	})
}

// step is a quantity that changes from before to after over one minute from
// at (a release that makes each request dearer).
func step(at, before, after float64) trace {
	return piecewiseLinear([]knot{{at, before}, {at + 60, after}})
}

// meanAndPeak are a trace's mean and highest value over [from, to), sampled
// every second.
func meanAndPeak(t trace, from, to float64) (mean, peak float64) {
	var sum float64
	n := 0
	peak = math.Inf(-1)
	for at := from; at < to; at++ {
		v := t(at)
		sum += v
		peak = max(peak, v)
		n++
	}
	return sum / float64(n), peak
}

// A noisy day is the smooth one times a multiple for each clock minute. The
// multiples come from a generator seeded by the case, so a run is as
// deterministic as one on the smooth trace: the same seed, the same noise.
func generator(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// whiteNoise is a multiple for each of minutes: 1 plus level times a number
// drawn evenly from [-1, 1], each minute on its own (the load jumps from
// minute to minute by up to twice the level).
func whiteNoise(seed uint64, level float64, minutes int) []float64 {
	g := generator(seed)
	m := make([]float64, minutes)
	for i := range m {
		m[i] = 1 + level*(2*g.Float64()-1)
	}
	return m
}

// wanderingNoise is a multiple for each of minutes that wanders: each
// minute keeps keep of the last one's deviation and adds a fresh draw, so
// the load drifts above or below the day's shape for several minutes, as a
// site's audience does. Its deviations spread as much as whiteNoise's
// (keep 0 is white noise); they are centred on the run's mean, as a drift
// that lasts many minutes would otherwise move a day's mean, and cut at
// the level.
func wanderingNoise(seed uint64, level, keep float64, minutes int) []float64 {
	g := generator(seed)
	d := make([]float64, minutes)
	var last float64
	for i := range d {
		last = keep*last + math.Sqrt(1-keep*keep)*(2*g.Float64()-1)
		d[i] = last
	}
	mean := meanOf(d)
	m := make([]float64, minutes)
	for i := range d {
		m[i] = 1 + level*min(1, max(-1, d[i]-mean))
	}
	return m
}

// perMinute is a trace that holds multiples[k] through the k-th minute of a
// run (the last one beyond).
func perMinute(multiples []float64) trace {
	return func(at float64) float64 {
		k := min(max(int(at/60), 0), len(multiples)-1)
		return multiples[k]
	}
}

// burstRise is how fast a short burst comes and goes: a link shared on a
// busy site, a retry storm.
const burstRise = 20.0

// bursts is a multiple of the load with n short bursts within length
// seconds: each starts at a random moment (at least half an hour from the
// others and from the run's ends), rises over burstRise seconds to a random
// multiple in [2, 3], holds it for a random 1 to 3 minutes and falls back.
func bursts(seed uint64, n int, length float64) trace {
	g := generator(seed)
	const apart = 30 * 60
	var starts []float64
	for len(starts) < n {
		at := math.Round(apart + g.Float64()*(length-2*apart))
		if !slices.ContainsFunc(starts, func(s float64) bool { return math.Abs(s-at) < apart }) {
			starts = append(starts, at)
		}
	}
	slices.Sort(starts)
	knots := []knot{{0, 1}}
	for _, at := range starts {
		factor := 2 + g.Float64()
		hold := math.Round(60 + 120*g.Float64())
		knots = append(knots, knot{at, 1}, knot{at + burstRise, factor}, knot{at + burstRise + hold, factor}, knot{at + 2*burstRise + hold, 1})
	}
	return piecewiseLinear(knots)
}

func meanOf(values []float64) float64 {
	var sum float64
	for _, v := range values {
		sum += v
	}
	return sum / float64(len(values))
}
