package main

import (
	"sync"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// servers holds every server the benchmark started; stopAll stops them, in
// reverse order of start, once.
type servers struct {
	mu   sync.Mutex
	list []*benchkit.Server
}

func (ss *servers) add(s *benchkit.Server) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = append(ss.list, s)
}

func (ss *servers) stopAll() {
	ss.mu.Lock()
	list := ss.list
	ss.list = nil
	ss.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].Stop()
	}
}
