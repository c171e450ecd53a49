package model

import (
	"fmt"
	"slices"
	"time"
	_ "time/tzdata" // schedules name IANA time zones; the operator's image has no zoneinfo

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// Recycling is the resolved worker recycling (IIS worker process
// recycling). Zero values turn a kind off.
type Recycling struct {
	// Interval recycles a worker this long after it started.
	Interval time.Duration
	// Requests recycles a worker after it served this many requests.
	Requests int64
	// MemoryBytes recycles a worker whose working set is over this.
	MemoryBytes int64
	// Schedule recycles every worker at these times of day.
	Schedule *Schedule
}

// Schedule is when in the day workers are recycled.
type Schedule struct {
	// Times are minutes after midnight, ascending.
	Times    []int
	Location *time.Location
}

// resolveRecycling reads spec.recycling; problems go to errs.
func resolveRecycling(r v1.Recycling, errs *errList) Recycling {
	out := Recycling{
		Interval: errs.duration("recycling.interval", r.Interval, v1.DefaultRecycleInterval),
		Requests: r.Requests,
	}
	if r.Memory != nil {
		out.MemoryBytes = errs.bytes("recycling.memory", r.Memory)
	}
	if len(r.Schedule.Times) > 0 {
		out.Schedule = resolveSchedule(r.Schedule, errs)
	}
	return out
}

func resolveSchedule(s v1.RecycleSchedule, errs *errList) *Schedule {
	out := &Schedule{Location: errs.location("recycling.schedule.timeZone", s.TimeZone)}
	if out.Location == nil {
		return nil
	}
	for _, t := range s.Times {
		var h, m int
		if _, err := fmt.Sscanf(t, "%2d:%2d", &h, &m); err != nil || len(t) != 5 || h > 23 || m > 59 {
			errs.add(fmt.Sprintf("recycling.schedule.times: %q is not a time of day (HH:MM)", t))
			continue
		}
		out.Times = append(out.Times, h*60+m)
	}
	slices.Sort(out.Times)
	out.Times = slices.Compact(out.Times)
	if len(out.Times) == 0 {
		return nil
	}
	return out
}

// location loads an IANA time zone; "" is UTC.
func (e *errList) location(field, zone string) *time.Location {
	loc, err := time.LoadLocation(orDefault(zone, "UTC"))
	if err != nil {
		e.add(fmt.Sprintf("%s: %q is not a known IANA time zone", field, zone))
		return nil
	}
	return loc
}
