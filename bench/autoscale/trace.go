package main

import (
	"math"
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
