package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Linux process accounting from /proc.

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user plus system CPU time a process has used.
func cpuSeconds(pid int) (float64, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// Fields after the command name start at field 3 (state); utime and stime
	// are fields 14 and 15.
	utime, err1 := strconv.ParseFloat(fields[14-3], 64)
	stime, err2 := strconv.ParseFloat(fields[15-3], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return f, nil
}

// statusBytes reads a memory line ("VmHWM", "VmRSS") of /proc/<pid>/status.
func statusBytes(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if value, ok := strings.CutPrefix(line, key+":"); ok {
			fields := strings.Fields(value) // "123456 kB"
			if len(fields) != 2 || fields[1] != "kB" {
				return 0, fmt.Errorf("unexpected %q in /proc/%d/status", line, pid)
			}
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// childProcesses finds the processes whose parent is this process, by command
// name: envtest starts kube-apiserver and etcd without telling their PIDs.
func childProcesses(names ...string) map[string]int {
	out := map[string]int{}
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		comm := s[open+1 : closing]
		f := strings.Fields(s[closing+1:])
		if len(f) < 2 || f[1] != self {
			continue
		}
		for _, n := range names {
			if comm == n {
				out[n] = pid
			}
		}
	}
	return out
}

// cpuSnapshot is the CPU time of each process of the benchmark.
type cpuSnapshot map[string]float64

func takeCPU(pids map[string]int) cpuSnapshot {
	s := cpuSnapshot{}
	for name, pid := range pids {
		if v, err := cpuSeconds(pid); err == nil {
			s[name] = v
		}
	}
	return s
}

// Prometheus text format, the subset the manager and the API server write.

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

type samples []sample

func parseMetrics(r io.Reader) (samples, error) {
	var out samples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("bad metric line %q", line)
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ,")
			if strings.HasPrefix(line, "}") {
				line = line[1:]
				break
			}
			eq := strings.IndexByte(line, '=')
			if eq < 0 || len(line) < eq+2 || line[eq+1] != '"' {
				return s, fmt.Errorf("bad labels in %q", line)
			}
			key := line[:eq]
			line = line[eq+2:]
			var val strings.Builder
			j := 0
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
					switch line[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(line[j])
					}
					continue
				}
				val.WriteByte(line[j])
			}
			if j >= len(line) {
				return s, fmt.Errorf("unterminated label value in %q", line)
			}
			s.labels[key] = val.String()
			line = line[j+1:]
		}
	}
	fields := strings.Fields(line)
	if len(fields) < 1 {
		return s, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value in %q: %w", line, err)
	}
	s.value = v
	return s, nil
}

// sum adds the samples named name whose labels match every given key=value.
func (ss samples) sum(name string, match ...string) float64 {
	var t float64
next:
	for _, s := range ss {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(match); i += 2 {
			if s.labels[match[i]] != match[i+1] {
				continue next
			}
		}
		t += s.value
	}
	return t
}

// by adds the samples named name per value of label.
func (ss samples) by(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		if s.name == name {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

// scrapeHTTP reads a /metrics endpoint; when save is set, the text is kept there.
func scrapeHTTP(ctx context.Context, url, save string) (samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseAndSave(raw, save)
}

// scrapeAPIServer reads the API server's own /metrics.
func scrapeAPIServer(ctx context.Context, cfg *rest.Config, save string) (samples, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseAndSave(raw, save)
}

func parseAndSave(raw []byte, save string) (samples, error) {
	if save != "" {
		if err := os.WriteFile(save, raw, 0o644); err != nil {
			return nil, err
		}
	}
	return parseMetrics(bytes.NewReader(raw))
}
