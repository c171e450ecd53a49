package controllers

import (
	"slices"
	"testing"
	"time"
)

func TestRetiredClustersStayForAWhile(t *testing.T) {
	var c retiredClusters
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	steps := []struct {
		name        string
		at          time.Duration
		routed      []string
		wantKept    []string
		wantRecheck time.Duration
	}{
		{"a farm's routed pools keep their clusters", 0, []string{"a", "b"}, []string{"a", "b"}, 0},
		{"a pool no route uses keeps its cluster for the retirement period", time.Second, []string{"a"}, []string{"a", "b"}, retireAfter},
		{"it is still kept shortly before the period ends", 20 * time.Second, []string{"a"}, []string{"a", "b"}, retireAfter - 19*time.Second},
		{"after the period its cluster goes", retireAfter + 2*time.Second, []string{"a"}, []string{"a"}, 0},
		{"a pool routed again is simply routed", retireAfter + 3*time.Second, []string{"a", "b"}, []string{"a", "b"}, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			kept, recheck := c.withRetired("web/contoso", s.routed, t0.Add(s.at))
			if !slices.Equal(kept, s.wantKept) || recheck != s.wantRecheck {
				t.Errorf("kept %v, recheck in %s; want %v, %s", kept, recheck, s.wantKept, s.wantRecheck)
			}
		})
	}
}
