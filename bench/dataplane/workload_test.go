package main

import (
	"strings"
	"testing"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/testutil"
)

func TestWebBenchMixMeetsTheStudysFacts(t *testing.T) {
	var total, under32k, most int
	for _, f := range webBench.files {
		total += f.weight
		if f.size < 32*kib {
			under32k += f.weight
		}
		if f.weight > most {
			most = f.weight
		}
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"the mix has nine files", len(webBench.files) == 9},
		{"the smallest file is 512 bytes", webBench.files[0].size == 512},
		{"the largest file is 128 KB", webBench.files[len(webBench.files)-1].size == 128*kib},
		{"the weights are requests per hundred", total == 100},
		{"92 percent of the requests are for files under 32 KB", under32k == 92},
		{"the 4 KB file is the most requested, and the only one that often", func() bool {
			n := 0
			for _, f := range webBench.files {
				if f.weight == most {
					n++
					if f.size != 4*kib {
						return false
					}
				}
			}
			return n == 1
		}()},
	}
	for _, c := range checks {
		if !c.ok {
			t.Error(c.name + ": not so")
		}
	}
}

func TestSequence(t *testing.T) {
	tests := []struct {
		name  string
		w     workload
		check func(t *testing.T, seq []string)
	}{
		{"a one-file workload asks for that file every time", headline, func(t *testing.T, seq []string) {
			for _, p := range seq {
				if p != headline.files[0].path {
					t.Fatalf("asked for %s", p)
				}
			}
		}},
		{"each file of the mix comes up as often as its weight says", webBench, func(t *testing.T, seq []string) {
			count := map[string]int{}
			for _, p := range seq {
				count[p]++
			}
			for _, f := range webBench.files {
				if count[f.path] != f.weight {
					t.Errorf("%s: %d times, want %d", f.path, count[f.path], f.weight)
				}
			}
		}},
		{"the most requested file is spread out, never asked for twice in a row", webBench, func(t *testing.T, seq []string) {
			for i := 1; i < len(seq); i++ {
				if seq[i] == seq[i-1] {
					t.Fatalf("%s twice in a row at %d", seq[i], i)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := tt.w.sequence()
			tt.check(t, seq)
			again := tt.w.sequence()
			if strings.Join(seq, ",") != strings.Join(again, ",") {
				t.Error("two calls gave different sequences")
			}
		})
	}
}

func TestMeanSize(t *testing.T) {
	if got := headline.meanSize(); got != 15*kib {
		t.Errorf("the headline's mean response is %.0f bytes, want 15 KB", got)
	}
	// 0.06*0.5 + 0.12*1 + 0.16*2 + 0.28*4 + 0.18*8 + 0.12*16 + 0.05*32 + 0.02*64 + 0.01*128 KB
	if got, want := webBench.meanSize(), 9.11*kib; got < want-1 || got > want+1 {
		t.Errorf("the mix's mean response is %.0f bytes, want %.0f", got, want)
	}
}

func TestWrkScript(t *testing.T) {
	tests := []struct {
		name     string
		w        workload
		contains []string
		lacks    []string
	}{
		{"a one-file workload keeps wrk's prebuilt request", headline,
			[]string{`wrk.path = "/iis6/15kb.html"`, "function done(", benchkit.ResultMarker},
			[]string{"function request("}},
		{"the mix formats its requests once and walks the sequence", webBench,
			[]string{`"/webbench/4kb.html",`, "function init(", "function request(", "function done("},
			[]string{"wrk.path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := wrkScript(tt.w)
			testutil.ExpectText(t, "the script", script, tt.contains, tt.lacks)
		})
	}
}
