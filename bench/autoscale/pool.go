package main

// pod is one worker: a container limited to podCores of CPU on a node whose
// processors run at mhz. It serves nothing and uses no CPU until it is
// ready, a pod start delay after it was created (scheduling, image, start,
// readiness probe).
type pod struct {
	mhz     float64
	created int
	ready   int
	// cpu is the core-seconds it used: the kubelet's cAdvisor counter.
	cpu       float64
	cpuScrape series
}

// pool is an application pool's workers behind the farm's frontend, which
// sends each ready worker the same share of the requests (round robin).
type pool struct {
	pods []*pod
	// requests is the frontend's counter of the requests sent to the pool.
	requests      float64
	requestScrape series
	// nodeMHz is the clock rate of the node the pod in a given place (0 for
	// the oldest) runs on.
	nodeMHz    func(place int) float64
	podCores   float64
	startDelay int
	keep       int // seconds of samples a rate window can reach
}

// scaleTo creates or removes pods. A ReplicaSet removes the pods that are
// not yet ready and then the youngest first, so pods come and go at the end
// of the list and the pod in place k always lands on the same kind of node.
func (p *pool) scaleTo(replicas, now int) {
	if replicas < len(p.pods) {
		p.pods = p.pods[:replicas]
	}
	for len(p.pods) < replicas {
		p.pods = append(p.pods, &pod{mhz: p.nodeMHz(len(p.pods)), created: now, ready: now + p.startDelay})
	}
}

// stepUse is what a pool did over one time step.
type stepUse struct {
	cyclesUsed, cyclesOffered float64 // megacycles, of the ready pods
	readyPods                 int
}

// serve runs the pool for dt seconds from now under a load of rps
// requests/s costing megacycles each.
func (p *pool) serve(now, dt int, rps, megacycles float64) stepUse {
	p.requests += rps * float64(dt)
	ready := p.readyMHz(now)
	cores, used, offered := spread(rps, megacycles, p.podCores, ready)
	var i int
	for _, w := range p.pods {
		if w.ready <= now {
			w.cpu += cores[i] * float64(dt)
			i++
		}
	}
	return stepUse{cyclesUsed: used * float64(dt), cyclesOffered: offered * float64(dt), readyPods: len(ready)}
}

func (p *pool) readyMHz(now int) []float64 {
	var mhz []float64
	for _, w := range p.pods {
		if w.ready <= now {
			mhz = append(mhz, w.mhz)
		}
	}
	return mhz
}

// spread gives each ready pod (by its node's clock rate) an equal share of
// rps requests/s of megacycles each: the cores each then uses, capped at its
// limit (beyond it requests wait or fail), and the megahertz the pods used
// and offered together. The same requests keep a 550 MHz pod busier than a
// 900 MHz one.
func spread(rps, megacycles, podCores float64, mhz []float64) (cores []float64, used, offered float64) {
	cores = make([]float64, len(mhz))
	if len(mhz) == 0 {
		return cores, 0, 0
	}
	share := rps / float64(len(mhz)) * megacycles
	for i, m := range mhz {
		cores[i] = min(share/m, podCores)
		used += cores[i] * m
		offered += podCores * m
	}
	return cores, used, offered
}

// scrape records every counter as Prometheus would at now: the frontend's
// and each running pod's, ready or not.
func (p *pool) scrape(now int) {
	p.requestScrape.record(now, p.requests, p.keep)
	for _, w := range p.pods {
		w.cpuScrape.record(now, w.cpu, p.keep)
	}
}

// reading is what a controller can know of the pool at a moment: the rates
// Prometheus gives over the window, and the pods' readiness from the API.
type reading struct {
	now               int
	requestsPerSecond float64
	requestsMeasured  bool
	pods              []podReading
}

type podReading struct {
	mhz                 float64
	created, readySince int
	ready               bool
	// cores is the rate of the pod's CPU counter, up to its newest sample
	// at measuredAt; measured is false while it has fewer than two samples.
	cores      float64
	measuredAt int
	measured   bool
}

func (p *pool) read(now, window int) reading {
	r := reading{now: now}
	r.requestsPerSecond, _, r.requestsMeasured = p.requestScrape.rate(now, window)
	for _, w := range p.pods {
		pr := podReading{mhz: w.mhz, created: w.created, readySince: w.ready, ready: w.ready <= now}
		pr.cores, pr.measuredAt, pr.measured = w.cpuScrape.rate(now, window)
		r.pods = append(r.pods, pr)
	}
	return r
}
