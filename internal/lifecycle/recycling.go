package lifecycle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

// Worker recycling, as IIS recycles worker processes: a worker past its
// age, its request count or its memory limit, or older than the latest
// scheduled time, is replaced. IIS starts the new worker process before
// the old one stops taking requests; here the pool runs one worker more
// until the replacement is Ready, then the ReplicaSet removes the marked
// worker (it has the lowest pod-deletion-cost). One worker at a time, and
// only while every worker the pool asks for is Ready: recycling never
// takes a pool below its size, and waits out updates and failures.

// Worker is one of the pool's worker pods as the collectors saw it.
type Worker struct {
	Name    string
	Started time.Time
	Ready   bool
	// Leaving: the pod is being deleted.
	Leaving bool
	// Recycling is the reason the worker was marked for ("": not marked).
	Recycling v1.RecycleReason
	// Requests the frontends sent it; RequestsKnown is false without their
	// statistics.
	Requests      int64
	RequestsKnown bool
	// MemoryBytes is its working set; MemoryKnown is false without a
	// reading.
	MemoryBytes int64
	MemoryKnown bool
}

// Recycle is a worker to mark for recycling.
type Recycle struct {
	Worker  string
	Reason  v1.RecycleReason
	Message string
}

const (
	// recycleLoopWindow: quick recycles for one reason that each follow
	// the one before within this long are "in a row", and a loop pauses
	// that reason this long.
	recycleLoopWindow = 10 * time.Minute
	// quickRecycle: a worker recycled this soon after it started was due
	// about as soon as it was measured; the recycle did not help.
	quickRecycle = 2 * time.Minute
	// scheduleGrace: a scheduled recycle still starts this long after its
	// time (an operator that was down at the time, a pool still starting).
	scheduleGrace = time.Hour
	// limitRecheck is how often a pool with a request or memory limit is
	// looked at again: about as often as those figures are read.
	limitRecheck = 15 * time.Second
	// replacementRecheck is how often a recycle in progress is looked at
	// until the replacement is Ready (pod updates bring most changes
	// sooner).
	replacementRecheck = 5 * time.Second
)

// recycling runs after the chain decided the pool's size: it adds the
// replacement's worker while a recycle is under way, and starts the next.
func recycling(in Input, d *Decision) {
	loop := recyclingLoop(in, d)
	if d.Stop != nil || d.Idle || d.Replicas == 0 {
		return
	}
	var marked, ready int32
	for _, w := range in.Observed.Workers {
		switch {
		case w.Leaving:
		case w.Recycling != "":
			marked++
		case w.Ready:
			ready++
		}
	}
	if marked > 0 {
		if ready < d.Replicas {
			d.Replicas++ // the replacement, until it is Ready
		}
		d.Recheck = sooner(d.Recheck, replacementRecheck)
		return
	}
	r := in.Pool.Recycling
	if ready < d.Replicas {
		// Starting, updating or failing: a recycle now could leave the pool
		// short.
		d.Recheck = sooner(d.Recheck, recheckFor(r, in.Observed.Workers, in.Now))
		return
	}
	next, ok := dueRecycle(r, in.Observed.Workers, in.Now, loop)
	if !ok {
		d.Recheck = sooner(d.Recheck, recheckFor(r, in.Observed.Workers, in.Now))
		return
	}
	d.Recycle = &next
	d.Replicas++
	d.Recheck = sooner(d.Recheck, replacementRecheck)
	d.Status.LastRecycles = withRecycle(d.Status.LastRecycles, next, in.Now, in.Now.Sub(startedOf(in.Observed.Workers, next.Worker)) < quickRecycle)
	d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: v1.ReasonRecycled, Action: "Recycle",
		Message: fmt.Sprintf("%s: %s; its replacement starts, then it stops", next.Worker, next.Message)})
}

// recyclingLoop reports the reasons whose quick recycles (of workers that
// had run less than quickRecycle) came in a row, each within
// recycleLoopWindow of the one before, twice as many as the pool has
// workers: the Recycling condition, a warning when it starts, and the
// reasons paused until the window passes. Only memory and request limits
// can loop: a replacement that crosses its limit as soon as it starts.
func recyclingLoop(in Input, d *Decision) map[v1.RecycleReason]bool {
	limit := 2 * max(d.Replicas, 1)
	if in.Pool.Replicas != nil {
		limit = 2 * max(*in.Pool.Replicas, d.Replicas, 1)
	}
	looping := map[v1.RecycleReason]bool{}
	var message string
	for _, rec := range d.Status.LastRecycles {
		if rec.Reason != v1.RecycleReasonMemory && rec.Reason != v1.RecycleReasonRequests {
			continue
		}
		if rec.InARow < limit || in.Now.Sub(rec.Time.Time) >= recycleLoopWindow {
			continue
		}
		looping[rec.Reason] = true
		message = fmt.Sprintf("%d recycles for %s in a row, each within %s of the one before (last: %s): "+
			"recycling for %s pauses until %s; the limit may be too low for this application",
			rec.InARow, rec.Reason, recycleLoopWindow, rec.Message, rec.Reason, rec.Time.Add(recycleLoopWindow).UTC().Format(time.RFC3339))
		d.Recheck = sooner(d.Recheck, rec.Time.Add(recycleLoopWindow).Sub(in.Now))
	}
	if len(looping) == 0 {
		meta.RemoveStatusCondition(&d.Status.Conditions, v1.ConditionRecycling)
		return nil
	}
	if !meta.IsStatusConditionFalse(d.Status.Conditions, v1.ConditionRecycling) {
		d.Events = append(d.Events, Event{Type: corev1.EventTypeWarning, Reason: v1.ReasonRecyclingLoop, Action: "Recycle", Message: message})
	}
	meta.SetStatusCondition(&d.Status.Conditions, condition(in, v1.ConditionRecycling, metav1.ConditionFalse, v1.ReasonRecyclingLoop, message))
	return looping
}

// dueRecycle is the worker to recycle next: the first reason in IIS's
// order (memory, requests, schedule, interval) that a worker is due for,
// the oldest such worker first.
func dueRecycle(r model.Recycling, workers []Worker, now time.Time, paused map[v1.RecycleReason]bool) (Recycle, bool) {
	candidates := slices.DeleteFunc(slices.Clone(workers), func(w Worker) bool { return w.Leaving || w.Recycling != "" })
	// Oldest first; creation times have whole seconds, so the name breaks ties.
	slices.SortFunc(candidates, func(a, b Worker) int {
		return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.Name, b.Name))
	})
	checks := []struct {
		reason v1.RecycleReason
		due    func(Worker) (string, bool)
	}{
		{v1.RecycleReasonMemory, func(w Worker) (string, bool) {
			over := r.MemoryBytes > 0 && w.MemoryKnown && w.MemoryBytes > r.MemoryBytes
			return fmt.Sprintf("its memory, %s, is over the limit of %s",
				resource.NewQuantity(w.MemoryBytes, resource.BinarySI), resource.NewQuantity(r.MemoryBytes, resource.BinarySI)), over
		}},
		{v1.RecycleReasonRequests, func(w Worker) (string, bool) {
			over := r.Requests > 0 && w.RequestsKnown && w.Requests >= r.Requests
			return fmt.Sprintf("it served %d requests, the limit is %d", w.Requests, r.Requests), over
		}},
		{v1.RecycleReasonSchedule, func(w Worker) (string, bool) {
			if r.Schedule == nil {
				return "", false
			}
			at := lastScheduled(*r.Schedule, now)
			due := w.Started.Before(at) && now.Sub(at) < scheduleGrace
			return fmt.Sprintf("it started before the scheduled recycle at %s", at.Format("15:04 MST")), due
		}},
		{v1.RecycleReasonInterval, func(w Worker) (string, bool) {
			age := now.Sub(w.Started)
			return fmt.Sprintf("it has run for %s, the recycling interval is %s", age.Truncate(time.Second), r.Interval),
				r.Interval > 0 && age >= r.Interval
		}},
	}
	for _, c := range checks {
		if paused[c.reason] {
			continue
		}
		for _, w := range candidates {
			if msg, due := c.due(w); due {
				return Recycle{Worker: w.Name, Reason: c.reason, Message: msg}, true
			}
		}
	}
	return Recycle{}, false
}

// recheckFor is when a recycle may next fall due though nothing changes:
// the next worker past its interval, the next scheduled time, or the next
// reading of requests and memory (0: never).
func recheckFor(r model.Recycling, workers []Worker, now time.Time) time.Duration {
	var next time.Duration
	if r.Requests > 0 || r.MemoryBytes > 0 {
		next = limitRecheck
	}
	if r.Schedule != nil {
		next = sooner(next, nextScheduled(*r.Schedule, now).Sub(now))
	}
	if r.Interval > 0 {
		for _, w := range workers {
			if !w.Leaving && w.Recycling == "" {
				next = sooner(next, w.Started.Add(r.Interval).Sub(now))
			}
		}
	}
	return next
}

// withRecycle is the status's latest recycle per reason with this one in;
// a quick one counts in a row with the one before it.
func withRecycle(last []v1.Recycle, r Recycle, now time.Time, quick bool) []v1.Recycle {
	rec := v1.Recycle{Reason: r.Reason, Time: metav1.Time{Time: now.Truncate(time.Second)}, Worker: r.Worker, Message: r.Message}
	if quick {
		rec.InARow = 1
	}
	i := slices.IndexFunc(last, func(l v1.Recycle) bool { return l.Reason == r.Reason })
	if i < 0 {
		out := append(slices.Clone(last), rec)
		slices.SortFunc(out, func(a, b v1.Recycle) int { return recycleOrder(a.Reason) - recycleOrder(b.Reason) })
		return out
	}
	if quick && now.Sub(last[i].Time.Time) < recycleLoopWindow {
		rec.InARow = last[i].InARow + 1
	}
	out := slices.Clone(last)
	out[i] = rec
	return out
}

// startedOf is when the named worker started.
func startedOf(workers []Worker, name string) time.Time {
	for _, w := range workers {
		if w.Name == name {
			return w.Started
		}
	}
	return time.Time{}
}

func recycleOrder(r v1.RecycleReason) int {
	return slices.Index([]v1.RecycleReason{v1.RecycleReasonMemory, v1.RecycleReasonRequests, v1.RecycleReasonSchedule, v1.RecycleReasonInterval}, r)
}

// sooner is the earlier of two rechecks, 0 meaning none; a recheck is at
// least a second away.
func sooner(a, b time.Duration) time.Duration {
	if b <= 0 {
		return a
	}
	b = max(b, time.Second)
	if a <= 0 {
		return b
	}
	return min(a, b)
}

// lastScheduled is the latest scheduled time at or before now.
func lastScheduled(s model.Schedule, now time.Time) time.Time {
	local := now.In(s.Location)
	for day := 0; day <= 1; day++ {
		d := local.AddDate(0, 0, -day)
		for _, m := range slices.Backward(s.Times) {
			t := time.Date(d.Year(), d.Month(), d.Day(), m/60, m%60, 0, 0, s.Location)
			if !t.After(now) {
				return t
			}
		}
	}
	return time.Time{} // unreachable: some time of yesterday is before now
}

// nextScheduled is the first scheduled time after now.
func nextScheduled(s model.Schedule, now time.Time) time.Time {
	local := now.In(s.Location)
	for day := 0; day <= 1; day++ {
		d := local.AddDate(0, 0, day)
		for _, m := range s.Times {
			t := time.Date(d.Year(), d.Month(), d.Day(), m/60, m%60, 0, 0, s.Location)
			if t.After(now) {
				return t
			}
		}
	}
	return time.Time{}
}
