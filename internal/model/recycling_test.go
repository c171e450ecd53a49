package model

import (
	"strings"
	"testing"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

func TestAScheduleKeepsEachTimeOnceInOrder(t *testing.T) {
	var errs errList
	s := resolveSchedule(v1.RecycleSchedule{Times: []string{"23:30", "03:00", "03:00"}, TimeZone: "America/New_York"}, &errs)
	if errs.err() != nil || s == nil {
		t.Fatalf("resolve: %v", errs.err())
	}
	if len(s.Times) != 2 || s.Times[0] != 180 || s.Times[1] != 23*60+30 {
		t.Fatalf("times = %v, want [180 1410] (sorted, once each)", s.Times)
	}
}

func TestAnUnknownTimeZoneIsReportedWithTheField(t *testing.T) {
	var errs errList
	if s := resolveSchedule(v1.RecycleSchedule{Times: []string{"03:00"}, TimeZone: "Mars/Olympus_Mons"}, &errs); s != nil {
		t.Fatalf("schedule = %+v, want none", s)
	}
	if err := errs.err(); err == nil || !strings.Contains(err.Error(), `recycling.schedule.timeZone: "Mars/Olympus_Mons" is not a known IANA time zone`) {
		t.Fatalf("error = %v", err)
	}
}
