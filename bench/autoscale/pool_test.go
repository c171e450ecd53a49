package main

import (
	"math"
	"testing"
)

func TestSpread(t *testing.T) {
	tests := []struct {
		name            string
		rps, megacycles float64
		mhz             []float64
		cores           []float64
		used, offered   float64
	}{
		{"round robin gives a 550 MHz pod more CPU than a 900 MHz pod for the same requests",
			198, 2.5, []float64{550, 900}, []float64{0.45, 0.275}, 495, 1450},
		{"a pod's CPU stops at its one-core limit: the rest of its requests wait",
			600, 2.5, []float64{550}, []float64{1}, 550, 550},
		{"no ready pod serves nothing and offers nothing", 100, 2.5, nil, []float64{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cores, used, offered := spread(tt.rps, tt.megacycles, 1, tt.mhz)
			for i := range tt.cores {
				if math.Abs(cores[i]-tt.cores[i]) > 1e-9 {
					t.Errorf("pod %d uses %.4f cores, want %.4f", i, cores[i], tt.cores[i])
				}
			}
			if math.Abs(used-tt.used) > 1e-9 || math.Abs(offered-tt.offered) > 1e-9 {
				t.Errorf("used %.1f of %.1f MHz, want %.1f of %.1f", used, offered, tt.used, tt.offered)
			}
		})
	}
}

func TestPool(t *testing.T) {
	newPool := func() *pool {
		return &pool{nodeMHz: alternateNodes, podCores: 1, startDelay: 45, keep: 75}
	}
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"a new pod serves nothing and uses no CPU until its start delay has passed", func(t *testing.T) {
			p := newPool()
			p.scaleTo(1, 0)
			if u := p.serve(40, 5, 66, 2.5); u.readyPods != 0 || u.cyclesUsed != 0 || p.pods[0].cpu != 0 {
				t.Errorf("before ready: %+v, %v core-seconds", u, p.pods[0].cpu)
			}
			if u := p.serve(45, 5, 66, 2.5); u.readyPods != 1 || math.Abs(u.cyclesUsed-165*5) > 1e-9 {
				t.Errorf("once ready: %+v, want 165 MHz for 5 s", u)
			}
		}},
		{"a scale-in removes the youngest pods first, so places keep their nodes", func(t *testing.T) {
			p := newPool()
			p.scaleTo(3, 0)
			p.scaleTo(1, 60)
			p.scaleTo(2, 120)
			if p.pods[0].created != 0 || p.pods[1].created != 120 || p.pods[1].mhz != fastMHz {
				t.Errorf("pods %+v %+v, want the first kept and a new one on a 900 MHz node", *p.pods[0], *p.pods[1])
			}
		}},
		{"the frontend counts every request, even with no pod ready", func(t *testing.T) {
			p := newPool()
			p.serve(0, 5, 100, 2.5)
			if p.requests != 500 {
				t.Errorf("%v requests counted, want 500", p.requests)
			}
		}},
		{"a reading has each pod's CPU rate and readiness", func(t *testing.T) {
			p := newPool()
			p.scaleTo(2, -45)
			for now := 0; now < 120; now += 5 {
				if now%15 == 10 {
					p.scrape(now)
				}
				p.serve(now, 5, 198, 2.5)
			}
			r := p.read(120, 60)
			if !r.requestsMeasured || math.Abs(r.requestsPerSecond-198) > 1e-9 {
				t.Errorf("%v requests/s (%v), want 198", r.requestsPerSecond, r.requestsMeasured)
			}
			if pr := r.pods[1]; !pr.ready || !pr.measured || math.Abs(pr.cores-0.275) > 1e-9 || pr.measuredAt != 115 {
				t.Errorf("900 MHz pod read as %+v, want 0.275 cores at 115 s", pr)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
