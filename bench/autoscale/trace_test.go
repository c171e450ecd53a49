package main

import (
	"math"
	"slices"
	"testing"
)

func TestTheTracesHaveTheSeedsFigures(t *testing.T) {
	contoso := contosoDays(1, 2)
	flash := product(contosoDays(1), surge(clock(20, 0), 60, 15*60, 4))
	tests := []struct {
		name         string
		load         trace
		from, to     float64
		mean, peak   float64
		meanAccuracy float64
	}{
		{"the normal day averages 139 requests/s (12,000,000 a day) and peaks at 300", contoso, 0, day, 139, 300, 1},
		{"the campaign day doubles it: 278 on average, 600 at the peak", contoso, day, 2 * day, 278, 600, 1},
		{"the evening peak holds 300 requests/s from 18:00 to 23:00", contoso, clock(18, 0), clock(23, 0), 300, 300, 1e-9},
		{"the campaign's evening holds 600", contoso, day + clock(18, 0), day + clock(23, 0), 600, 600, 1e-9},
		{"the flash crowd is 4x the evening's 300 for 15 minutes", flash, clock(20, 1), clock(20, 16), 1200, 1200, 1e-9},
		{"the flash crowd is over two minutes after it has fallen", flash, clock(20, 17), clock(20, 30), 300, 300, 1e-9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, peak := meanAndPeak(tt.load, tt.from, tt.to)
			if math.Abs(mean-tt.mean) > tt.meanAccuracy {
				t.Errorf("mean %.2f requests/s, want %.2f", mean, tt.mean)
			}
			if math.Abs(peak-tt.peak) > 1e-9 {
				t.Errorf("peak %.2f requests/s, want %.2f", peak, tt.peak)
			}
		})
	}
}

func TestPiecewiseLinear(t *testing.T) {
	tr := piecewiseLinear([]knot{{0, 10}, {10, 20}, {20, 0}})
	tests := []struct {
		name string
		at   float64
		want float64
	}{
		{"before the first knot holds its value", -5, 10},
		{"between two knots lies on the line joining them", 5, 15},
		{"on a knot is its value", 10, 20},
		{"a falling segment falls", 15, 10},
		{"after the last knot holds its value", 30, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tr(tt.at); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("at %v: %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

func TestSurgeAndStep(t *testing.T) {
	s := surge(100, 60, 900, 4)
	dearer := step(100, 2.5, 3.5)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"a surge starts at 1x", s(100), 1},
		{"a surge is halfway up after half its rise", s(130), 2.5},
		{"a surge reaches its multiple within a minute", s(160), 4},
		{"a surge holds its multiple", s(1000), 4},
		{"a surge falls back to 1x over its rise", s(1120), 1},
		{"a release's cost is the old one before it", dearer(99), 2.5},
		{"a release's cost is the new one a minute after", dearer(160), 3.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if math.Abs(tt.got-tt.want) > 1e-9 {
				t.Errorf("%v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestNoiseIsSeeded(t *testing.T) {
	tests := []struct {
		name  string
		noise func(seed uint64) []float64
	}{
		{"white noise of a seed is the same every time", func(seed uint64) []float64 { return whiteNoise(seed, 0.3, 2880) }},
		{"wandering noise of a seed is the same every time", func(seed uint64) []float64 { return wanderingNoise(seed, 0.3, 0.9, 2880) }},
		{"bursts of a seed are the same every time", func(seed uint64) []float64 { return sampled(bursts(seed, 12, 2*day), 2*day) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.noise(1), tt.noise(1)) {
				t.Error("two runs of seed 1 differ")
			}
			if slices.Equal(tt.noise(1), tt.noise(2)) {
				t.Error("seeds 1 and 2 give the same noise")
			}
		})
	}
}

// sampled is a trace every 10 s over [0, length).
func sampled(tr trace, length float64) []float64 {
	var out []float64
	for at := 0.0; at < length; at += 10 {
		out = append(out, tr(at))
	}
	return out
}

func TestNoiseHasItsStatedLevelAndKeepsTheMean(t *testing.T) {
	const minutes = 2880
	tests := []struct {
		name      string
		multiples []float64
		level     float64
	}{
		{"white noise of ±15 % spans 0.85 to 1.15", whiteNoise(noise15Seed, 0.15, minutes), 0.15},
		{"white noise of ±30 % spans 0.7 to 1.3", whiteNoise(noise30Seed, 0.30, minutes), 0.30},
		{"wandering noise of ±30 % spans 0.7 to 1.3", wanderingNoise(wanderSeed, 0.30, 0.9, minutes), 0.30},
		{"the noisy flash crowd's ±30 % spans 0.7 to 1.3", whiteNoise(flashSeed, 0.30, minutes/2), 0.30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lowest, highest := slices.Min(tt.multiples), slices.Max(tt.multiples)
			if lowest < 1-tt.level-1e-12 || highest > 1+tt.level+1e-12 {
				t.Errorf("multiples from %.3f to %.3f, beyond ±%.2f", lowest, highest, tt.level)
			}
			if lowest > 1-0.95*tt.level || highest < 1+0.95*tt.level {
				t.Errorf("multiples from %.3f to %.3f: they do not reach ±%.2f", lowest, highest, tt.level)
			}
			// The level is the reach; the spread of an even draw is level / √3.
			var sum, squares float64
			for _, m := range tt.multiples {
				sum += m
				squares += (m - 1) * (m - 1)
			}
			n := float64(len(tt.multiples))
			if sd := math.Sqrt(squares / n); math.Abs(sd-tt.level/math.Sqrt(3)) > 0.15*tt.level/math.Sqrt(3) {
				t.Errorf("standard deviation %.3f, want about %.3f", sd, tt.level/math.Sqrt(3))
			}
			if mean := sum / n; math.Abs(mean-1) > 0.02 {
				t.Errorf("mean multiple %.4f, want 1 within 2 %%", mean)
			}
		})
	}
}

func TestNoisyCasesKeepTheDaysMean(t *testing.T) {
	smooth := contosoDays(1, 2)
	for _, sc := range noisyScenarios() {
		if sc.key == "bursts" || sc.key == "bursts-mixed" {
			continue // bursts add load by design
		}
		for d := 0; float64(d)*day < float64(sc.length); d++ {
			from, to := float64(d)*day, float64(d+1)*day
			want, _ := meanAndPeak(smooth, from, to)
			if sc.flashCrowd {
				want, _ = meanAndPeak(product(contosoDays(1), surge(clock(20, 0), 60, 15*60, 4)), from, to)
			}
			t.Run(sc.key+" keeps day "+string(rune('1'+d))+"'s mean within 2 %", func(t *testing.T) {
				if got, _ := meanAndPeak(sc.load, from, to); math.Abs(got/want-1) > 0.02 {
					t.Errorf("mean %.1f requests/s, smooth %.1f", got, want)
				}
			})
		}
	}
}

func TestBurstsAreShortAndTwoToThreeTimesTheLoad(t *testing.T) {
	b := bursts(burstSeed, 12, 2*day)
	var count, inBurst, longest int
	peakOfBurst, lowestPeak, highestPeak := 0.0, math.Inf(1), 0.0
	for at := 0.0; at < 2*day; at++ {
		v := b(at)
		if v < 1-1e-12 || v > 3+1e-12 {
			t.Fatalf("multiple %.3f at %.0f s, outside 1 to 3", v, at)
		}
		switch {
		case v > 1 && inBurst == 0:
			count++
			inBurst, peakOfBurst = 1, v
		case v > 1:
			inBurst++
			peakOfBurst = max(peakOfBurst, v)
		case inBurst > 0:
			longest = max(longest, inBurst)
			lowestPeak, highestPeak = min(lowestPeak, peakOfBurst), max(highestPeak, peakOfBurst)
			inBurst = 0
		}
	}
	if count != 12 {
		t.Errorf("%d bursts, want 12", count)
	}
	if lowestPeak < 2 || highestPeak > 3 {
		t.Errorf("bursts peak from %.2fx to %.2fx, want 2x to 3x", lowestPeak, highestPeak)
	}
	if longest > 3*60+2*burstRise {
		t.Errorf("the longest burst lasts %d s, want at most 3 minutes and its rise and fall", longest)
	}
}
