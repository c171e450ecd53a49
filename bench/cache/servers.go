package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil/localcache"
)

// Names of the benchmark's pool, as a user would write them.
const (
	benchNamespace = "bench"
	poolName       = "images"
	siteHost       = "images.bench.example"
)

// benchPool is the gallery's pool, a default AppPool serving static files.
func benchPool() (model.Pool, error) { return benchkit.StaticPool(benchNamespace, poolName) }

// cacheSettings are the CachePolicy fields a case sets; the others keep the
// API's defaults.
type cacheSettings struct {
	threshold   int32
	period, ttl time.Duration
	memory      int64
}

// benchCache is a CachePolicy in front of the pool at 127.0.0.1:port,
// resolved as the operator resolves it.
func benchCache(s cacheSettings, port int) (model.Cache, error) {
	cp := &v1.CachePolicy{}
	cp.Name, cp.Namespace = "gallery", benchNamespace
	cp.Spec.FrequentHitThreshold = s.threshold
	cp.Spec.FrequentHitPeriod = v1.Duration(s.period.String())
	cp.Spec.ObjectTTL = v1.Duration(s.ttl.String())
	cp.Spec.MemorySize = resource.NewQuantity(s.memory, resource.BinarySI)
	return model.ResolveCache(cp, []model.Upstream{{Pool: poolName, Address: "127.0.0.1", Port: int32(port)}}, model.Platform{})
}

// stubRequests reads the requests counter of an nginx stub_status page. The
// read is itself a request: the counter includes it.
func stubRequests(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseStubStatus(resp.Body)
}

// parseStubStatus reads the third number under "server accepts handled
// requests".
func parseStubStatus(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "server accepts handled requests" {
			continue
		}
		if !sc.Scan() {
			break
		}
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return 0, fmt.Errorf("stub_status: unexpected counters %q", sc.Text())
		}
		return strconv.ParseInt(f[2], 10, 64)
	}
	return 0, errors.New("stub_status: no requests counter")
}

// tierPIDs are the cache tier's nginx master (from its pid file) and the
// processes it started (workers, cache manager and loader).
func tierPIDs(t *localcache.Tier) ([]int, error) {
	raw, err := os.ReadFile(filepath.Join(t.Dir, "nginx.pid"))
	if err != nil {
		return nil, err
	}
	master, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, err
	}
	pids := []int{master}
	procs, err := benchkit.ProcStats(func(pid int, f []string) bool { return f[1] == strconv.Itoa(master) }) // f[1] is ppid
	if err != nil {
		return nil, err
	}
	for pid := range procs {
		pids = append(pids, pid)
	}
	return pids, nil
}

// placeTier puts the cache tier's nginx processes, which localcache started,
// on the given processors ("": leave them) under nice, as the other nginx
// processes run.
func placeTier(t *localcache.Tier, cpu int) error {
	pids, err := tierPIDs(t)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(pid, &set); err != nil {
				return fmt.Errorf("pinning the cache tier's nginx %d: %w", pid, err)
			}
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, pid, benchkit.Niceness); err != nil {
			return fmt.Errorf("renicing the cache tier's nginx %d: %w", pid, err)
		}
	}
	return nil
}

// tierCPU is the CPU time used so far by the cache tier's nginx processes.
func tierCPU(t *localcache.Tier) (time.Duration, error) {
	pids, err := tierPIDs(t)
	if err != nil {
		return 0, err
	}
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	return benchkit.SumCPU(func(pid int, _ []string) bool { return want[pid] })
}

// niceSelf puts every thread of the benchmark's own process (the replay
// client and the cache agent) under nice; threads started later inherit it.
func niceSelf() {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, benchkit.Niceness)
		}
	}
}

// selfCPU is the CPU time of the benchmark's own process: the replay client
// and the cache agent.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
