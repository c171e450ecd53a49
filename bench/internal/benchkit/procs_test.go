package benchkit

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestNiced(t *testing.T) {
	tests := []struct {
		name string
		cpus string
		want []string
	}{
		{"without processors the command only runs under nice", "", []string{"nice", "-n", "19", "wrk", "-c", "1"}},
		{"with processors it is pinned to them too", "1", []string{"nice", "-n", "19", "taskset", "-c", "1", "wrk", "-c", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Niced(tt.cpus, []string{"wrk", "-c", "1"}); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAServerRunsInAProcessGroupOfItsOwn(t *testing.T) {
	s, err := StartServer("sleeper", filepath.Join(t.TempDir(), "sleep.log"), "", "sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()
	if err := s.Exited(); err != nil {
		t.Fatalf("exited at once: %v", err)
	}
	// nice execs sleep: the process keeps the PID that was started.
	pids, err := GroupPIDs(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pids, []int{s.PID()}) {
		t.Errorf("the group holds %v, want only %d", pids, s.PID())
	}
	stats, err := ProcStats(func(pid int, _ []string) bool { return pid == s.PID() })
	if err != nil || stats[s.PID()][2] != strconv.Itoa(s.PID()) {
		t.Errorf("its process group is %v (%v), want its own PID", stats[s.PID()], err)
	}
	if _, err := s.CPUTime(); err != nil {
		t.Error(err)
	}
	s.Stop()
	stopped = true
	if s.Exited() == nil {
		t.Error("still running after Stop")
	}
}

func TestMachineBusyGrows(t *testing.T) {
	a, err := MachineBusy()
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitQuiet(context.Background(), 1e9, time.Second); err != nil { // any load is quiet enough
		t.Fatal(err)
	}
	b, err := MachineBusy()
	if err != nil {
		t.Fatal(err)
	}
	if a <= 0 || b < a {
		t.Errorf("busy %s, then %s", a, b)
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Errorf("ports %v", ports)
	}
}

func TestPlacement(t *testing.T) {
	tests := []struct {
		name         string
		pin          bool
		processors   int
		cpus, hopCPU string
		hop          int
	}{
		{"unpinned, every process may run on any processor", false, 4, "", "", -1},
		{"pinned on one processor there is nothing to pin", true, 1, "", "", -1},
		{"pinned on two processors the hop has the second", true, 2, "0", "1", 1},
		{"pinned on four processors the hop has the last", true, 4, "0", "3", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if cpus, hopCPUs, hop := placementOn(tt.pin, tt.processors); cpus != tt.cpus || hopCPUs != tt.hopCPU || hop != tt.hop {
				t.Errorf("got %q %q %d, want %q %q %d", cpus, hopCPUs, hop, tt.cpus, tt.hopCPU, tt.hop)
			}
		})
	}
}
