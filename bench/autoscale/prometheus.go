package main

// A controller sees a pool only through Prometheus: counters scraped every
// scrape interval and turned into per-second rates over a window. The
// readings are therefore late and smoothed, and every contender gets the
// same ones.

// sample is a counter's value at a scrape, seconds from the run's start.
type sample struct {
	at    int
	value float64
}

// series is one counter's scraped samples, oldest first; only the recent
// ones a rate window can reach are kept.
type series struct {
	samples []sample
}

// record appends a scrape and forgets samples older than keep seconds.
func (s *series) record(at int, value float64, keep int) {
	s.samples = append(s.samples, sample{at, value})
	cut := 0
	for cut < len(s.samples) && s.samples[cut].at <= at-keep {
		cut++
	}
	s.samples = s.samples[cut:]
}

// rate is the counter's increase per second over the samples in the window
// (now-window, now], as PromQL's rate() gives it without its extrapolation
// to the window's edges: the increase between the first and the last sample
// over the time between them. With fewer than two samples there is no
// figure. last is the newest sample's time.
func (s *series) rate(now, window int) (perSecond float64, last int, ok bool) {
	var first, newest *sample
	for i := range s.samples {
		sm := &s.samples[i]
		if sm.at <= now-window || sm.at > now {
			continue
		}
		if first == nil {
			first = sm
		}
		newest = sm
	}
	if first == nil || newest == first {
		return 0, 0, false
	}
	return (newest.value - first.value) / float64(newest.at-first.at), newest.at, true
}
