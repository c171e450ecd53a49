package main

import (
	"fmt"
	"time"

	"webfarm.dev/operator/internal/autoscale"
)

// The seed's figures: a request costs 2.5 megacycles (4 x 550 MHz saturated
// at 893 requests/s), and the Contoso servers run at 550 MHz; the scale-out
// adds 900 MHz servers.
const (
	contosoMegacycles = 2.5
	slowMHz           = 550
	fastMHz           = 900
)

func sameNodes(mhz float64) func(int) float64 { return func(int) float64 { return mhz } }

// alternateNodes places the oldest pod on a 550 MHz node, the next on a 900
// MHz node, and so on: half the pool on each kind, as the seed's mixed farm.
func alternateNodes(place int) float64 {
	if place%2 == 0 {
		return slowMHz
	}
	return fastMHz
}

func scenarios() []scenario {
	contoso := contosoDays(1, 2)
	cases := []scenario{
		{
			key: "contoso", title: "Contoso: a normal day, then the campaign day at double",
			about:  "two days from 04:00, the quietest hour; a day of a night trough of 30 requests/s, a working day near 100 and 300 from 18:00 to 23:00, then the same day doubled (from 04:00 on day 2)",
			length: int(2 * day), load: contoso, megacycles: constant(contosoMegacycles), nodeMHz: sameNodes(slowMHz),
			contoso: true,
		},
		{
			key: "heterogeneous", title: "Heterogeneous nodes: pods alternate between 550 MHz and 900 MHz nodes",
			about:  "the Contoso trace; pods 1, 3, 5, ... on 550 MHz nodes, pods 2, 4, 6, ... on 900 MHz nodes; round robin gives each the same requests",
			length: int(2 * day), load: contoso, megacycles: constant(contosoMegacycles), nodeMHz: alternateNodes,
		},
		{
			key: "flash-crowd", title: "Flash crowd: 4x the evening load within a minute, for 15 minutes",
			about:  "a normal Contoso day; at 20:00 the load rises to 4x (300 to 1,200 requests/s) over one minute, holds 15 minutes and falls back over one minute",
			length: int(day), load: product(contosoDays(1), surge(clock(20, 0), 60, 15*60, 4)), megacycles: constant(contosoMegacycles), nodeMHz: sameNodes(slowMHz),
			flashCrowd: true,
		},
		{
			key: "dearer-requests", title: "Dearer requests: a release at noon makes each request cost 40 % more",
			about:  "a normal Contoso day; from 12:00 (over one minute) a request costs 3.5 megacycles instead of 2.5",
			length: int(day), load: contosoDays(1), megacycles: step(clock(12, 0), contosoMegacycles, 1.4*contosoMegacycles), nodeMHz: sameNodes(slowMHz),
		},
	}
	return append(cases, noisyScenarios()...)
}

// Seeds of the noisy cases: any fixed numbers; a case's seed gives its
// noise and bursts, the same on same and mixed nodes.
const (
	noise15Seed = 15
	noise30Seed = 30
	wanderSeed  = 42
	burstSeed   = 7
	flashSeed   = 2000
)

// noisyScenarios are the seed's traffic as real traffic comes: minute to
// minute noise of several levels and shapes, and short bursts. Each runs on
// same and on mixed nodes.
func noisyScenarios() []scenario {
	twoDays := int(2 * day)
	minutes := twoDays / 60
	traces := []scenario{
		{
			key: "noise-15", title: "Noise ±15 %: the Contoso days, each minute up to 15 % off",
			about:  "the Contoso trace times a multiple for each clock minute, drawn evenly from 0.85 to 1.15 (seed 15)",
			length: twoDays, load: product(contosoDays(1, 2), perMinute(whiteNoise(noise15Seed, 0.15, minutes))),
		},
		{
			key: "noise-30", title: "Noise ±30 %: the Contoso days, each minute up to 30 % off",
			about:  "the Contoso trace times a multiple for each clock minute, drawn evenly from 0.7 to 1.3 (seed 30)",
			length: twoDays, load: product(contosoDays(1, 2), perMinute(whiteNoise(noise30Seed, 0.30, minutes))),
		},
		{
			key: "wander-30", title: "Wandering ±30 %: the Contoso days, drifting off for minutes at a time",
			about:  "the Contoso trace times a multiple for each clock minute that keeps 90 % of the last minute's deviation, cut at 0.7 and 1.3 (seed 42)",
			length: twoDays, load: product(contosoDays(1, 2), perMinute(wanderingNoise(wanderSeed, 0.30, 0.9, minutes))),
		},
		{
			key: "bursts", title: "Bursts: the Contoso days with ±15 % noise and 12 bursts of 2x to 3x",
			about:  "the noise-15 trace times 12 bursts at random moments, each rising over 20 s to 2x to 3x, holding 1 to 3 minutes and falling over 20 s (seed 7)",
			length: twoDays, load: product(product(contosoDays(1, 2), perMinute(whiteNoise(noise15Seed, 0.15, minutes))), bursts(burstSeed, 12, 2*day)),
		},
		{
			key: "noisy-flash-crowd", title: "Noisy flash crowd: the flash crowd with ±30 % noise",
			about:  "the flash-crowd trace times a multiple for each clock minute, drawn evenly from 0.7 to 1.3 (seed 2000)",
			length: int(day), load: product(product(contosoDays(1), surge(clock(20, 0), 60, 15*60, 4)), perMinute(whiteNoise(flashSeed, 0.30, int(day)/60))),
			flashCrowd: true,
		},
	}
	var cases []scenario
	for _, sc := range traces {
		sc.megacycles = constant(contosoMegacycles)
		same, mixed := sc, sc
		same.nodeMHz = sameNodes(slowMHz)
		same.about += "; every pod on a 550 MHz node"
		mixed.key += "-mixed"
		mixed.title += ", on mixed nodes"
		mixed.nodeMHz = alternateNodes
		mixed.about += "; pods alternate between 550 MHz and 900 MHz nodes"
		cases = append(cases, same, mixed)
	}
	return cases
}

// defaults is the model the benchmark runs unless flags say otherwise.
func defaults() config {
	return config{
		step: 5, sync: 15, scrape: 15, scrapeAge: 5, rateWindow: 60,
		podStartDelay: 45, stabilization: 300, podCores: 1,
		utilizationCap: 0.30, tolerance: 0.1, referenceMHz: slowMHz,
		minReplicas: 1, maxReplicas: 50,
	}
}

// contenders are the autoscalers of a run, fresh for each case.
func contenders(c config) []namedController {
	behavior := hpaBehavior{
		minReplicas: c.minReplicas, maxReplicas: c.maxReplicas,
		downWindow: c.stabilization, period: 15, upPods: 4, upPercent: 100,
	}
	return []namedController{
		{"ours (cycles per request)", &ours{policy: autoscale.Policy{
			MinReplicas: int32(c.minReplicas), MaxReplicas: int32(c.maxReplicas),
			TargetUtilization:   c.utilizationCap,
			StabilizationWindow: time.Duration(c.stabilization) * time.Second,
			ReplicaCores:        c.podCores, DefaultMHz: c.referenceMHz,
			ScaleUpLead: time.Duration(scaleUpLead(c)) * time.Second,
		}}},
		{fmt.Sprintf("HPA, CPU %.0f %%", c.utilizationCap*100),
			&hpaCPU{behavior: behavior, target: c.utilizationCap, tolerance: c.tolerance, podCores: c.podCores, rateWindow: c.rateWindow}},
		{fmt.Sprintf("KEDA-style, %.0f requests/s per pod", thresholdPerPod(c)),
			&threshold{behavior: behavior, perPod: thresholdPerPod(c), tolerance: c.tolerance}},
		// No target: the HPA set to hold the cap. Its tolerance lets the
		// utilisation reach the target x 1.1 before it scales out.
		{fmt.Sprintf("HPA, CPU %.1f %% (set to hold %.0f %%)", c.utilizationCap/(1+c.tolerance)*100, c.utilizationCap*100),
			&hpaCPU{behavior: behavior, target: c.utilizationCap / (1 + c.tolerance), tolerance: c.tolerance, podCores: c.podCores, rateWindow: c.rateWindow}},
	}
}

type namedController struct {
	name       string
	controller controller
}

// thresholdPerPod is the requests/s a pod of the reference clock carries at
// the cap, at the seed's cost: 550 x 0.30 / 2.5 = 66.
func thresholdPerPod(c config) float64 {
	return c.referenceMHz * c.podCores * c.utilizationCap / contosoMegacycles
}

// scaleUpLead is how long ours looks ahead on a rising load: from a change
// of the load to a new pod serving it, at worst a rate window, a sync period
// and the pod start delay.
func scaleUpLead(c config) int { return c.rateWindow + c.sync + c.podStartDelay }
