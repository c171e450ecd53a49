package main

import (
	"fmt"
	"math"
)

// config is a run's model; every duration is in whole seconds.
type config struct {
	step          int // the simulation's time step
	sync          int // every controller decides this often
	scrape        int // Prometheus scrape interval
	scrapeAge     int // how old the newest scrape is when a controller reads
	rateWindow    int // the window of rate()
	podStartDelay int
	stabilization int // scale-down window of ours and of the HPA
	podCores      float64
	// utilizationCap is the policy: the share of the ready pods' cycles
	// the load may use (0.30); it is also every contender's target.
	utilizationCap float64
	tolerance      float64 // the HPA's
	referenceMHz   float64 // the clock rate a pod is planned on (550)
	minReplicas    int
	maxReplicas    int
}

func (c config) validate() error {
	if c.step <= 0 || 60%c.step != 0 {
		return fmt.Errorf("step %d s does not divide a minute", c.step)
	}
	for _, d := range []struct {
		name  string
		value int
	}{{"sync", c.sync}, {"scrape", c.scrape}, {"rate window", c.rateWindow}, {"pod start delay", c.podStartDelay}, {"stabilization", c.stabilization}, {"scrape age", c.scrapeAge}} {
		if d.value < 0 || d.value%c.step != 0 {
			return fmt.Errorf("%s %d s is not a non-negative multiple of the %d s step", d.name, d.value, c.step)
		}
	}
	switch {
	case c.sync == 0 || c.scrape == 0:
		return fmt.Errorf("sync and scrape intervals must be positive")
	case c.scrapeAge >= c.scrape:
		return fmt.Errorf("scrape age %d s is not below the scrape interval %d s", c.scrapeAge, c.scrape)
	case c.rateWindow < 2*c.scrape:
		return fmt.Errorf("rate window %d s holds fewer than two scrapes of %d s", c.rateWindow, c.scrape)
	case !(c.podCores > 0) || !(c.utilizationCap > 0 && c.utilizationCap <= 1) || !(c.referenceMHz > 0):
		return fmt.Errorf("pod cores, utilisation cap and reference MHz must be positive (cap at most 1)")
	case c.minReplicas < 1 || c.maxReplicas < c.minReplicas:
		return fmt.Errorf("replicas must be 1 <= min <= max, got %d..%d", c.minReplicas, c.maxReplicas)
	}
	return nil
}

// scenario is one case: a load trace, what a request costs, and where pods
// land.
type scenario struct {
	key, title, about string
	length            int // seconds
	load, megacycles  trace
	nodeMHz           func(place int) float64
	// Which targets apply beyond the ones for every case.
	contoso, flashCrowd bool
}

// result is one contender's figures on one case.
type result struct {
	replicaMinutes  float64
	minutesAboveCap int
	actions         int // changes of the replica count
	peakReplicas    int
}

// overCap: the ready pods used more than limit of the cycles they offered,
// or there was load and no ready pod.
func overCap(used, offered, load, limit float64) bool {
	if offered == 0 {
		return load > 0
	}
	return used > limit*offered*(1+1e-9)
}

// loadAt is the load and its cost over the step that starts at now (taken at
// the step's middle).
func loadAt(sc scenario, c config, now int) (rps, megacycles float64) {
	mid := float64(now) + float64(c.step)/2
	return sc.load(mid), sc.megacycles(mid)
}

// needs is the fewest pods each step needs to stay within the cap.
func needs(sc scenario, c config) []int {
	need := make([]int, sc.length/c.step)
	for i := range need {
		rps, mc := loadAt(sc, c, i*c.step)
		need[i] = fewestPods(rps, mc, c.podCores, c.utilizationCap, sc.nodeMHz, c.minReplicas, c.maxReplicas)
	}
	return need
}

// initialReplicas is where every contender starts: ready pods enough for the
// first pod start delay, as the oracle would have started them.
func initialReplicas(need []int, c config) int {
	return oraclePlan(need, c.podStartDelay/c.step)[0]
}

// simulate runs one contender through a case. A controller decides every
// period seconds (from the first period on); Prometheus scrapes every
// scrape interval, scrapeAge seconds before each sync.
func simulate(sc scenario, c config, ctl controller, period, initial int) (result, error) {
	if sc.length <= 0 || sc.length%60 != 0 {
		return result{}, fmt.Errorf("%s: %d s is not a whole number of minutes", sc.key, sc.length)
	}
	p := &pool{nodeMHz: sc.nodeMHz, podCores: c.podCores, startDelay: c.podStartDelay, keep: c.rateWindow + c.scrape}
	p.scaleTo(initial, -c.podStartDelay)
	var res result
	res.peakReplicas = initial
	minutes := sc.length / 60
	used := make([]float64, minutes)
	offered := make([]float64, minutes)
	starved := make([]bool, minutes)
	var replicaSeconds float64
	for now := 0; now < sc.length; now += c.step {
		if (now+c.scrapeAge)%c.scrape == 0 {
			p.scrape(now)
		}
		if now > 0 && now%period == 0 {
			current := len(p.pods)
			next := ctl.decide(now, current, func() reading { return p.read(now, c.rateWindow) })
			if next < 0 || next > c.maxReplicas {
				return res, fmt.Errorf("%s at %d s: %d replicas is outside 0..%d", sc.key, now, next, c.maxReplicas)
			}
			if next != current {
				res.actions++
				p.scaleTo(next, now)
				res.peakReplicas = max(res.peakReplicas, next)
			}
		}
		rps, mc := loadAt(sc, c, now)
		if math.IsNaN(rps) || rps < 0 || math.IsNaN(mc) || mc <= 0 {
			return res, fmt.Errorf("%s at %d s: load %v requests/s of %v megacycles", sc.key, now, rps, mc)
		}
		u := p.serve(now, c.step, rps, mc)
		m := now / 60
		used[m] += u.cyclesUsed
		offered[m] += u.cyclesOffered
		starved[m] = starved[m] || (rps > 0 && u.readyPods == 0)
		replicaSeconds += float64(len(p.pods) * c.step)
	}
	for m := range minutes {
		if starved[m] || overCap(used[m], offered[m], 0, c.utilizationCap) {
			res.minutesAboveCap++
		}
	}
	res.replicaMinutes = replicaSeconds / 60
	return res, nil
}
