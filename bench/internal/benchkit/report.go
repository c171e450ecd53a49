package benchkit

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Median of an odd count is the middle value, of an even count the mean of
// the two middle ones; of none, 0.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// MedianOf is the median of a figure over samples.
func MedianOf[S any](samples []S, figure func(S) float64) float64 {
	vs := make([]float64, len(samples))
	for i, s := range samples {
		vs[i] = figure(s)
	}
	return Median(vs)
}

// PairedRatio is the median over the rounds of a figure of a divided by the
// same figure of b in the same round (a round b lacks, or where b's figure is
// 0, is left out): both measurements of a round are seconds apart, so other
// work on a shared machine weighs on both alike.
func PairedRatio[S any](a, b []S, figure func(S) float64) float64 {
	var ratios []float64
	for i := range min(len(a), len(b)) {
		if figure(b[i]) > 0 {
			ratios = append(ratios, figure(a[i])/figure(b[i]))
		}
	}
	return Median(ratios)
}

// Millis shows a latency in milliseconds.
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// Micros shows a CPU time per request in microseconds.
func Micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// Machine describes the host the benchmark ran on.
func Machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs%s, %s/%s, shared with other work", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH)
}
