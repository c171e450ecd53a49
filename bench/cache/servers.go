package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil/localcache"
)

// Names of the benchmark's pool, as a user would write them.
const (
	benchNamespace = "bench"
	poolName       = "images"
	siteHost       = "images.bench.example"
)

// niceness: every process of the benchmark yields the CPU to anything else
// running on this (shared) machine.
const niceness = 19

// benchPool is an AppPool with every field left to its default (500m CPU: one
// nginx worker) serving static files, resolved as the operator resolves it.
func benchPool() (model.Pool, error) {
	ap := &v1.AppPool{}
	ap.Name, ap.Namespace = poolName, benchNamespace
	ap.Spec.Content = &v1.Content{Image: &v1.ImageContent{Reference: "localhost/bench-content:1"}}
	return model.ResolvePool(ap, model.Platform{})
}

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
	cp.Spec.MemorySize = *resource.NewQuantity(s.memory, resource.BinarySI)
	return model.ResolveCache(cp, []model.Upstream{{Pool: poolName, Address: "127.0.0.1", Port: int32(port)}}, model.Platform{})
}

// poolLayout is where the pool worker's files and ports are on this host
// instead of in its pod.
type poolLayout struct {
	contentDir, tmpDir   string
	httpPort, statusPort int
}

// localPoolConfig moves the rendered pool nginx.conf from the pod's paths and
// ports to the benchmark's, and changes nothing else. Each replacement must
// match: a renderer that changed its paths or ports fails here, loudly.
func localPoolConfig(rendered string, l poolLayout) (string, error) {
	// The temporary paths go first: the new paths may themselves be under /tmp.
	replacements := []struct{ old, new string }{
		{" " + nginx.TmpDir + "/", " " + l.tmpDir + "/"},
		{"root " + nginx.ContentDir + ";", "root " + l.contentDir + ";"},
		{fmt.Sprintf("listen %d default_server reuseport;", nginx.HTTPPort), fmt.Sprintf("listen 127.0.0.1:%d default_server reuseport;", l.httpPort)},
		{fmt.Sprintf("listen %d;", nginx.StatusPort), fmt.Sprintf("listen 127.0.0.1:%d;", l.statusPort)},
	}
	out := rendered
	for _, r := range replacements {
		if !strings.Contains(out, r.old) {
			return "", fmt.Errorf("the rendered pool config has no %q: the renderer changed, adapt bench/cache", r.old)
		}
		out = strings.ReplaceAll(out, r.old, r.new)
	}
	return out, nil
}

// proxyLayout is the baseline proxy's place on this host.
type proxyLayout struct {
	TmpDir   string
	Port     int
	Upstream int // the pool worker's port
}

// proxyConfig is the baseline of the cache-hit path, the same as the data
// path benchmark's: an nginx reverse proxy in front of the pool worker set up
// as ingress-nginx sets up its nginx by default (1 worker, upstream
// keep-alive, proxy_buffering off), without the access log.
func proxyConfig(l proxyLayout) (string, error) {
	var b strings.Builder
	if err := proxyTemplate.Execute(&b, l); err != nil {
		return "", err
	}
	return b.String(), nil
}

var proxyTemplate = template.Must(template.New("proxy").Parse(`# The baseline: an nginx reverse proxy as ingress-nginx configures it.
worker_processes 1;
daemon off;
pid {{.TmpDir}}/nginx.pid;
error_log stderr warn;

events {
    worker_connections 16384;
}

http {
    access_log off;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 10000;
    client_body_temp_path {{.TmpDir}}/client_body;
    proxy_temp_path {{.TmpDir}}/proxy;
    fastcgi_temp_path {{.TmpDir}}/fastcgi;
    uwsgi_temp_path {{.TmpDir}}/uwsgi;
    scgi_temp_path {{.TmpDir}}/scgi;

    # ingress-nginx's upstream keep-alive defaults.
    upstream pool {
        server 127.0.0.1:{{.Upstream}};
        keepalive 320;
        keepalive_requests 10000;
        keepalive_timeout 60s;
        keepalive_time 1h;
    }

    server {
        listen 127.0.0.1:{{.Port}} default_server reuseport;

        location / {
            proxy_pass http://pool;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Request-ID $request_id;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Host $host;
            proxy_set_header X-Forwarded-Port $server_port;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Scheme $scheme;
            proxy_set_header Proxy "";
            proxy_connect_timeout 5s;
            proxy_send_timeout 60s;
            proxy_read_timeout 60s;
            proxy_buffering off;
            proxy_buffer_size 4k;
            proxy_buffers 4 4k;
            proxy_next_upstream error timeout;
        }
    }
}
`))

// niced is the command line that runs argv under nice and, when cpus is set,
// on those processors only (taskset); both exec the command, so the process
// keeps the PID that the benchmark started.
func niced(cpus string, argv []string) []string {
	out := []string{"nice", "-n", strconv.Itoa(niceness)}
	if cpus != "" {
		out = append(out, "taskset", "-c", cpus)
	}
	return append(out, argv...)
}

// server is an nginx the benchmark started, in a process group of its own:
// Ctrl-C in the terminal reaches only the benchmark, which then stops it.
type server struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // why it exited, once done is closed
}

// startNginx writes conf into dir and starts nginx on it, niced, on the given
// processors ("": any).
func startNginx(bin, name, dir, conf, cpus string) (*server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "nginx.log"))
	if err != nil {
		return nil, err
	}
	argv := niced(cpus, []string{bin, "-e", "stderr", "-p", dir, "-c", path})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		if s.err == nil {
			s.err = errors.New("exited")
		}
		close(s.done)
	}()
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// exited is nil while the process runs.
func (s *server) exited() error {
	select {
	case <-s.done:
		return fmt.Errorf("%s %w (log: %s)", s.name, s.err, s.log.Name())
	default:
		return nil
	}
}

// stop asks nginx to end (SIGTERM), then kills what is left of its process
// group (the group's id is the PID the benchmark started).
func (s *server) stop() {
	defer s.log.Close()
	_ = syscall.Kill(s.pid(), syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
	<-s.done
}

// cpuTime is the CPU time used so far by the server's processes.
func (s *server) cpuTime() (time.Duration, error) {
	return sumCPU(func(pid int, f []string) bool { return f[2] == strconv.Itoa(s.pid()) }) // f[2] is pgrp
}

// waitReady polls url until it answers 200, the deadline passes or the
// server exits.
func waitReady(ctx context.Context, s *server, url string) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := s.exited(); err != nil {
			return err
		}
		err := get(ctx, client, url, nil, nil)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready: %w", s.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get fetches url with the site's Host and the given headers, checks for 200
// and, when want is set, the body; it returns the response's headers.
func get(ctx context.Context, client *http.Client, url string, headers map[string]string, want []byte) error {
	_, err := getHeader(ctx, client, url, headers, want)
	return err
}

func getHeader(ctx context.Context, client *http.Client, url string, headers map[string]string, want []byte) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Host = siteHost
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if want != nil && string(body) != string(want) {
		return nil, fmt.Errorf("GET %s: got %d bytes, not the file's %d", url, len(body), len(want))
	}
	return resp.Header, nil
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
	procs, err := procStats(func(pid int, f []string) bool { return f[1] == strconv.Itoa(master) }) // f[1] is ppid
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
		if err := unix.Setpriority(unix.PRIO_PROCESS, pid, niceness); err != nil {
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
	return sumCPU(func(pid int, _ []string) bool { return want[pid] })
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
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, niceness)
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

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// sumCPU adds user and system time over the processes that match.
func sumCPU(match func(pid int, fields []string) bool) (time.Duration, error) {
	procs, err := procStats(match)
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, f := range procs {
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procStats reads /proc/PID/stat of the processes that match: the fields
// after the command name, by PID.
func procStats(match func(pid int, fields []string) bool) (map[int][]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int][]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// The command name is in parentheses and may hold spaces: fields count from after it.
		_, rest, ok := strings.Cut(string(raw), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) >= 13 && match(pid, f) {
			out[pid] = f
		}
	}
	return out, nil
}

// machineBusy is the CPU time all processors have spent not idle since boot.
func machineBusy() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// waitQuiet waits, at most maxWait, until the machine's processors are busy
// below threshold (in processors, over half a second).
func waitQuiet(ctx context.Context, threshold float64, maxWait time.Duration) error {
	const window = 500 * time.Millisecond
	deadline := time.Now().Add(maxWait)
	for time.Now().Before(deadline) {
		before, err := machineBusy()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
		after, err := machineBusy()
		if err != nil {
			return err
		}
		if (after-before).Seconds()/window.Seconds() < threshold {
			return nil
		}
	}
	return nil
}

// freePorts reserves n distinct loopback ports; they are released just before
// the servers bind them.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
