package main

import (
	"fmt"
	"strings"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// file is one file a workload asks for, and its share of the requests.
type file struct {
	path   string // URL path, also the file's place under the content root
	size   int
	weight int // requests per 100
}

// workload is a set of files and how often each is requested; every request
// is a keep-alive GET.
type workload struct {
	name  string // for -workloads
	title string
	files []file
}

const kib = 1024

// headline is the IIS 6.0 scalability figure: a 15 KB static file over
// keep-alive connections.
var headline = workload{
	name:  "static-15k",
	title: "IIS 6 headline: one 15 KB file, keep-alive",
	files: []file{{path: "/iis6/15kb.html", size: 15 * kib, weight: 100}},
}

// webBench is the WebBench static mix as the Netfinity/IIS study describes
// it: nine files from 512 B to 128 KB, 4 KB the most requested, 92 % of the
// requests for files under 32 KB. The study gives no exact sizes or weights:
// the sizes here are the nine powers of two in that range and the weights are
// ours, chosen to meet those three facts.
var webBench = workload{
	name:  "webbench",
	title: "WebBench static mix: nine files, 512 B - 128 KB, weighted",
	files: []file{
		{path: "/webbench/512b.html", size: 512, weight: 6},
		{path: "/webbench/1kb.html", size: 1 * kib, weight: 12},
		{path: "/webbench/2kb.html", size: 2 * kib, weight: 16},
		{path: "/webbench/4kb.html", size: 4 * kib, weight: 28},
		{path: "/webbench/8kb.html", size: 8 * kib, weight: 18},
		{path: "/webbench/16kb.html", size: 16 * kib, weight: 12},
		{path: "/webbench/32kb.html", size: 32 * kib, weight: 5},
		{path: "/webbench/64kb.html", size: 64 * kib, weight: 2},
		{path: "/webbench/128kb.html", size: 128 * kib, weight: 1},
	},
}

var workloads = []workload{headline, webBench}

// meanSize is the average response body in bytes.
func (w workload) meanSize() float64 {
	var bytes, weights float64
	for _, f := range w.files {
		bytes += float64(f.size * f.weight)
		weights += float64(f.weight)
	}
	return bytes / weights
}

// sequence lists the paths in the order the client requests them: each file
// as often as its weight says, spread out by smooth weighted round robin (the
// order nginx uses for weighted upstreams), so that any stretch of the run
// sees the mix, not runs of one file. Deterministic.
func (w workload) sequence() []string {
	total := 0
	for _, f := range w.files {
		total += f.weight
	}
	current := make([]int, len(w.files))
	out := make([]string, 0, total)
	for range total {
		best := 0
		for i, f := range w.files {
			current[i] += f.weight
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out = append(out, w.files[best].path)
	}
	return out
}

// content is a file's body (benchkit.Content), checked before the load.
func content(f file) []byte { return benchkit.Content(f.path, f.size) }

// writeContent writes the files of every workload under root.
func writeContent(root string, ws []workload) error {
	for _, w := range ws {
		for _, f := range w.files {
			if err := benchkit.WriteContent(root, f.path, f.size); err != nil {
				return err
			}
		}
	}
	return nil
}

// wrkScript is the client's Lua script: it walks the workload's sequence
// (requests formatted once, up front) and prints the results as one JSON line
// after the run (benchkit.WrkDone). A one-file workload keeps wrk's own
// prebuilt request.
func wrkScript(w workload) string {
	seq := w.sequence()
	if len(w.files) == 1 {
		return benchkit.WrkScript(seq[0])
	}
	var b strings.Builder
	b.WriteString("local paths = {\n")
	for _, p := range seq {
		fmt.Fprintf(&b, "  %q,\n", p)
	}
	b.WriteString(`}
local requests = {}
local cursor = 0

function init(args)
  for i, p in ipairs(paths) do
    requests[i] = wrk.format("GET", p)
  end
end

function request()
  cursor = cursor % #requests + 1
  return requests[cursor]
end
`)
	b.WriteString(benchkit.WrkDone)
	return b.String()
}

// h2loadURIs is h2load's input: the workload's sequence as the site's
// HTTPS URLs, one a line. Each connection walks it from the start.
func h2loadURIs(w workload) string {
	var b strings.Builder
	for _, p := range w.sequence() {
		b.WriteString("https://" + siteHost + p + "\n")
	}
	return b.String()
}
