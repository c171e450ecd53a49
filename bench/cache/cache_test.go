package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTheRequestSequence(t *testing.T) {
	t.Parallel()
	const files, n = 4000, 20000
	base := zipfSequence(files, n, 1.1, 2)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"the same seed gives the same sequence", func(t *testing.T) {
			if again := zipfSequence(files, n, 1.1, 2); !slices.Equal(base, again) {
				t.Error("two sequences from seed 2 differ")
			}
		}},
		{"another seed gives another sequence", func(t *testing.T) {
			if other := zipfSequence(files, n, 1.1, 3); slices.Equal(base, other) {
				t.Error("seeds 2 and 3 gave the same sequence")
			}
		}},
		{"a shorter sequence is the start of a longer one", func(t *testing.T) {
			if short := zipfSequence(files, 100, 1.1, 2); !slices.Equal(short, base[:100]) {
				t.Error("the first 100 requests depend on the length")
			}
		}},
		{"every request names a file of the site", func(t *testing.T) {
			for i, f := range base {
				if f < 0 || f >= files {
					t.Fatalf("request %d names file %d of %d", i, f, files)
				}
			}
		}},
		{"popularity is skewed: the most requested file gets far more than its even share", func(t *testing.T) {
			counts := map[int]int{}
			for _, f := range base {
				counts[f]++
			}
			top := 0
			for _, c := range counts {
				top = max(top, c)
			}
			if even := n / files; top < 100*even {
				t.Errorf("the most requested file got %d requests, want at least 100x the even share %d", top, even)
			}
		}},
		{"the most popular files are a mix of images and thumbnails", func(t *testing.T) {
			counts := make([]int, files)
			for _, f := range base {
				counts[f]++
			}
			order := make([]int, files)
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return counts[b] - counts[a] })
			images := 0
			for _, f := range order[:50] {
				if f < files/2 {
					images++
				}
			}
			if images < 10 || images > 40 {
				t.Errorf("%d of the 50 most requested files are images, want a mix", images)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t)
		})
	}
}

func TestTheWorkingSet(t *testing.T) {
	t.Parallel()
	sizes := []int{100, 10, 1}
	tests := []struct {
		name string
		seq  []int
		rate float64
		want workingSet
	}{
		{"a file asked for once is neither repeated nor frequent", []int{0}, 1, workingSet{distinct: 1, distinctBytes: 100}},
		{"a file asked for twice within the period is frequent", []int{0, 1, 0}, 1,
			workingSet{distinct: 2, distinctBytes: 110, repeated: 1, repeatedBytes: 100, frequent: 1, frequentBytes: 100}},
		{"a file asked for twice further apart than the period is repeated, not frequent", []int{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, 1,
			workingSet{distinct: 2, distinctBytes: 101, repeated: 2, repeatedBytes: 101, frequent: 1, frequentBytes: 100}},
		{"a faster rate puts the same requests within the period", []int{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, 2,
			workingSet{distinct: 2, distinctBytes: 101, repeated: 2, repeatedBytes: 101, frequent: 2, frequentBytes: 101}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := measureWorkingSet(tt.seq, sizes, tt.rate, 10*time.Second); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTheIdealStaticCache(t *testing.T) {
	t.Parallel()
	sizes := []int{100, 10, 10}
	tests := []struct {
		name  string
		seq   []int
		limit int64
		want  float64
	}{
		{"a cache that holds every file answers every request", []int{0, 1, 2, 0}, 1000, 1},
		{"a cache too small for any file answers none", []int{0, 1, 2}, 5, 0},
		{"the most requests per byte go first: two small files beat one large one", []int{0, 0, 0, 1, 1, 2, 2}, 100, 4.0 / 7},
		{"an empty sequence has nothing to answer", nil, 1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := topShare(tt.seq, sizes, tt.limit); got != tt.want {
				t.Errorf("got %.3f, want %.3f", got, tt.want)
			}
		})
	}
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	t.Parallel()
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"no values give 0", nil, 99, 0},
		{"one value is every percentile", ms(7), 99, 7 * time.Millisecond},
		{"p50 of four values is the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100 values is the 99th", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the largest", ms(1, 2, 3), 100, 3 * time.Millisecond},
		{"a tiny percentile is the smallest", ms(1, 2, 3), 0.001, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTheReportsFigures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		got, want float64
	}{
		{"hit % counts bypasses as not hits", hitPercent(3, 0, 1), 75},
		{"hit % of no lookups is 0", hitPercent(0, 0, 0), 0},
		{"a case that sends half the requests to the pool avoids 50 %", avoidedPercent(500, 1000), 50},
		{"without the no-cache case nothing is avoided", avoidedPercent(500, 0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestSlowAnswersAreCounted(t *testing.T) {
	t.Parallel()
	sorted := []time.Duration{time.Millisecond, 399 * time.Millisecond, 400 * time.Millisecond, 501 * time.Millisecond}
	tests := []struct {
		name  string
		limit time.Duration
		want  int
	}{
		{"an answer at the limit counts", 400 * time.Millisecond, 2},
		{"a limit above every answer counts none", time.Second, 0},
		{"a limit below every answer counts all", 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := atLeast(sorted, tt.limit); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTheStubStatusPage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		page    string
		want    int64
		wantErr bool
	}{
		{"the requests counter is the third number", "Active connections: 1 \nserver accepts handled requests\n 5 6 42 \nReading: 0 Writing: 1 Waiting: 0 \n", 42, false},
		{"a page without counters is an error", "Active connections: 1 \n", 0, true},
		{"a counters line of another shape is an error", "server accepts handled requests\n 5 6\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStubStatus(strings.NewReader(tt.page))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// The pool worker's and the baseline proxy's configs are tested with
// benchkit, which renders both.
func TestTheCasesCachePolicy(t *testing.T) {
	t.Parallel()
	c, err := benchCache(cacheSettings{threshold: 1, period: 10 * time.Second, ttl: 180 * time.Second, memory: 16 << 20}, 1234)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"the cache keeps the API's defaults for what a case does not set", c.MaxObjectSizeBytes == 256<<10 && c.ClientCacheMode == "NoControl" && c.CPUMilli == 250},
		{"the cache has the case's settings", c.FrequentHitThreshold == 1 && c.ObjectTTL == 180*time.Second && c.MemorySizeBytes == 16<<20},
		{"the cache fronts the pool worker", len(c.Upstreams) == 1 && c.Upstreams[0].Pool == poolName && c.Upstreams[0].Port == 1234},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Error("does not hold")
			}
		})
	}
}
