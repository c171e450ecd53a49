package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// file is one file of the benchmark's site.
type file struct {
	path string // URL path, also the file's place under the content root
	size int
}

// site is an image gallery: full-size images and their thumbnails, all of
// them served by the pool worker from its content folder.
type site struct {
	files []file
}

// newSite lists images of imageSize bytes and as many thumbnails of
// thumbSize bytes; the images come first.
func newSite(images, imageSize, thumbSize int) site {
	var s site
	for i := range images {
		s.files = append(s.files, file{path: fmt.Sprintf("/images/%04d.jpg", i), size: imageSize})
	}
	for i := range images {
		s.files = append(s.files, file{path: fmt.Sprintf("/thumbs/%04d.jpg", i), size: thumbSize})
	}
	return s
}

// bytes is the size of every file together.
func (s site) bytes() int64 {
	var n int64
	for _, f := range s.files {
		n += int64(f.size)
	}
	return n
}

// hotFile is the single small file of the cache-hit path, apart from the
// site's files: the IIS 6 headline size.
var hotFile = file{path: "/hot/15kb.html", size: 15 * 1024}

// content is a file's body (benchkit.Content), checked on the way.
func content(f file) []byte { return benchkit.Content(f.path, f.size) }

// writeContent writes the files under root.
func writeContent(root string, files []file) error {
	for _, f := range files {
		if err := benchkit.WriteContent(root, f.path, f.size); err != nil {
			return err
		}
	}
	return nil
}

// zipfSequence draws n requests over files files: the rank of each request
// follows Zipf's law with exponent s (rank r is asked for in proportion to
// 1/r^s), and a seeded shuffle gives each rank its file, so that images and
// thumbnails mix among the popular ones. The same arguments give the same
// sequence, on every machine. s must be above 1.
func zipfSequence(files, n int, s float64, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fileOfRank := rng.Perm(files)
	z := rand.NewZipf(rng, s, 1, uint64(files-1))
	seq := make([]int, n)
	for i := range seq {
		seq[i] = fileOfRank[z.Uint64()]
	}
	return seq
}

// workingSet describes a request sequence against the files it asks for.
type workingSet struct {
	distinct      int   // files asked for at all
	distinctBytes int64 // and their bytes
	repeated      int   // files asked for at least twice
	repeatedBytes int64
	// frequent are the files asked for twice within the period at least once,
	// when the sequence is sent at the given rate: the only files that a
	// threshold of 2 within that period ever admits.
	frequent      int
	frequentBytes int64
}

// measureWorkingSet looks at seq as sent at rate requests per second.
func measureWorkingSet(seq []int, sizes []int, rate float64, period time.Duration) workingSet {
	var w workingSet
	last := map[int]int{} // file -> index of its last request
	count := map[int]int{}
	frequent := map[int]bool{}
	window := period.Seconds() * rate // requests within one period
	for i, f := range seq {
		if j, ok := last[f]; ok && float64(i-j) <= window && !frequent[f] {
			frequent[f] = true
			w.frequent++
			w.frequentBytes += int64(sizes[f])
		}
		last[f] = i
		count[f]++
	}
	for f, c := range count {
		w.distinct++
		w.distinctBytes += int64(sizes[f])
		if c >= 2 {
			w.repeated++
			w.repeatedBytes += int64(sizes[f])
		}
	}
	return w
}

// topShare is the share of the requests that go to the most requested files
// whose sizes add up to at most limit bytes: what a perfect cache of that
// size, holding the right files from the start, would answer.
func topShare(seq []int, sizes []int, limit int64) float64 {
	if len(seq) == 0 {
		return 0
	}
	count := map[int]int{}
	for _, f := range seq {
		count[f]++
	}
	files := make([]int, 0, len(count))
	for f := range count {
		files = append(files, f)
	}
	// Most requests per byte first: the best use of the memory.
	slices.SortFunc(files, func(a, b int) int {
		ra := float64(count[a]) / float64(sizes[a])
		rb := float64(count[b]) / float64(sizes[b])
		if c := cmp.Compare(rb, ra); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var used int64
	served := 0
	for _, f := range files {
		if used+int64(sizes[f]) > limit {
			continue
		}
		used += int64(sizes[f])
		served += count[f]
	}
	return float64(served) / float64(len(seq))
}
