package controllers

import (
	"time"

	"k8s.io/utils/clock"
)

// readClock reads a reconciler's clock: the one its options name (tests inject a
// fake), or the real one when none is set. Reconcilers and their decisions
// take the time from here only.
func readClock(c clock.PassiveClock) time.Time {
	if c == nil {
		return clock.RealClock{}.Now()
	}
	return c.Now()
}
