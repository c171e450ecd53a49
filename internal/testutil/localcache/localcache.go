// Package localcache runs a real cache tier on loopback for tests and
// benchmarks: the nginx.conf and agent configuration the operator renders
// for a CachePolicy, moved to free loopback ports and a private folder, with
// the real nginx and the real agent.
package localcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/cacheagent"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// Tier is a running cache tier.
type Tier struct {
	// URL is the cache's HTTP endpoint; requests name their pool in the
	// vocabulary.PoolHeader header, as the frontend sends them.
	URL string
	// AdminURL is the agent's stats and purge endpoint; it asks for
	// AdminToken (the model's, else TestAdminToken).
	AdminURL   string
	AdminToken string
	agent      cacheadmin.Client
	// Dir holds the config, the cache folder and nginx's files.
	Dir string

	nginx  *exec.Cmd
	log    *bytes.Buffer
	cancel context.CancelFunc
	// stopped closes when the agent's Run returns, with its error in runErr.
	stopped chan struct{}
	runErr  error
}

// Start renders c (its Upstreams are the pools' loopback addresses) and runs
// nginx and the agent. nginxBin is the nginx program. Stop ends both.
//
// The free ports it picks may be taken by another process before nginx or
// the agent binds them (tests run tiers in parallel): it tries three times.
func Start(nginxBin string, c model.Cache) (*Tier, error) {
	return StartWithClock(nginxBin, c, time.Now)
}

// StartWithClock is Start with the agent's frequent-hit window on the clock
// now, so a test can let its period pass without waiting for it.
func StartWithClock(nginxBin string, c model.Cache, now func() time.Time) (*Tier, error) {
	var errs []error
	for range 3 {
		dir, err := os.MkdirTemp("", "webfarm-cache-")
		if err != nil {
			return nil, err
		}
		t := &Tier{Dir: dir, log: &bytes.Buffer{}}
		err = t.start(nginxBin, c, now)
		if err == nil {
			return t, nil
		}
		t.Stop() // first: nginx no longer writes to its log
		errs = append(errs, fmt.Errorf("%w\n%s", err, t.log))
	}
	return nil, errors.Join(errs...)
}

// TestAdminToken is the agent's admin token when the model has none.
const TestAdminToken = "local-cache-tier-admin-token-for-tests"

func (t *Tier) start(nginxBin string, c model.Cache, now func() time.Time) error {
	if c.AdminToken == "" {
		c.AdminToken = TestAdminToken
	}
	t.AdminToken = c.AdminToken
	// nginx's workers run as nobody when the caller is root: they must
	// reach the folder and write the cache.
	cacheDir := filepath.Join(t.Dir, "cache")
	if err := os.MkdirAll(cacheDir, 0o777); err != nil {
		return err
	}
	for _, d := range []string{t.Dir, cacheDir} {
		if err := os.Chmod(d, 0o777); err != nil {
			return err
		}
	}
	ports, err := testutil.FreePorts(4)
	if err != nil {
		return err
	}
	httpPort, statusPort, proxyPort, adminPort := ports[0], ports[1], ports[2], ports[3]
	conf, err := nginx.CacheConfig(c)
	if err != nil {
		return err
	}
	for _, r := range []struct{ old, new string }{
		{nginx.TmpDir + "/", t.Dir + "/"},
		{fmt.Sprintf("listen %d ", nginx.HTTPPort), fmt.Sprintf("listen 127.0.0.1:%d ", httpPort)},
		{fmt.Sprintf("listen %d;", nginx.StatusPort), fmt.Sprintf("listen 127.0.0.1:%d;", statusPort)},
		{fmt.Sprintf("server 127.0.0.1:%d;", nginx.AgentProxyPort), fmt.Sprintf("server 127.0.0.1:%d;", proxyPort)},
	} {
		if !strings.Contains(conf, r.old) {
			return fmt.Errorf("the rendered config has no %q", r.old)
		}
		conf = strings.ReplaceAll(conf, r.old, r.new)
	}
	raw, err := nginx.CacheAgentConfig(c)
	if err != nil {
		return err
	}
	var cfg vocabulary.AgentConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return err
	}
	cfg.CacheDir = cacheDir
	cfg.LogSocket = strings.Replace(cfg.LogSocket, nginx.TmpDir+"/", t.Dir+"/", 1)
	cfg.NginxStatusURL = strings.Replace(cfg.NginxStatusURL, fmt.Sprintf(":%d/", nginx.StatusPort), fmt.Sprintf(":%d/", statusPort), 1)
	cfg.ProxyAddress = "127.0.0.1:" + strconv.Itoa(proxyPort)
	cfg.AdminAddress = "127.0.0.1:" + strconv.Itoa(adminPort)
	agent, err := cacheagent.New(cfg)
	if err != nil {
		return err
	}
	agent.Now = now
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.stopped = cancel, make(chan struct{})
	go func() {
		t.runErr = agent.Run(ctx)
		close(t.stopped)
	}()
	t.AdminURL = fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	t.agent = cacheadmin.Client{Port: int32(adminPort)}
	if err := waitFor(t.AdminURL+vocabulary.AgentHealthPath, t.stopped, &t.runErr); err != nil {
		return fmt.Errorf("the agent did not start: %w", err)
	}

	path := filepath.Join(t.Dir, nginx.ConfigFile)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	t.nginx = exec.Command(nginxBin, "-p", t.Dir, "-e", "stderr", "-c", path)
	t.nginx.Stdout, t.nginx.Stderr = t.log, t.log
	if err := t.nginx.Start(); err != nil {
		t.nginx = nil
		return err
	}
	t.URL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	// Over TCP: an HTTP request would count as a hit.
	if err := waitForTCP(fmt.Sprintf("127.0.0.1:%d", httpPort)); err != nil {
		return fmt.Errorf("nginx did not start: %w\n%s", err, t.log)
	}
	return nil
}

// Log is what nginx wrote so far.
func (t *Tier) Log() string { return t.log.String() }

// Stats reads the agent's counters, as the operator does.
func (t *Tier) Stats() (vocabulary.AgentStats, error) {
	return t.agent.Stats(context.Background(), "127.0.0.1", t.AdminToken)
}

// Purge asks the agent to purge a pool's entries ("" for all), as the
// operator does, and returns how many it removed.
func (t *Tier) Purge(pool string) (int, error) {
	n, err := t.agent.Purge(context.Background(), "127.0.0.1", t.AdminToken, pool)
	return int(n), err
}

// Stop ends nginx (gracefully: its workers finish) and the agent, and
// removes the folder.
func (t *Tier) Stop() {
	if t.nginx != nil {
		_ = t.nginx.Process.Signal(syscall.SIGTERM)
		_ = t.nginx.Wait()
	}
	if t.cancel != nil {
		t.cancel()
		<-t.stopped
	}
	_ = os.RemoveAll(t.Dir)
}

// waitFor polls url until it answers, for up to 10 s, or until stopped
// closes (then *stoppedErr says why).
func waitFor(url string, stopped <-chan struct{}, stoppedErr *error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-stopped:
			return fmt.Errorf("stopped: %v", *stoppedErr)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForTCP polls until address accepts a connection, for up to 10 s.
func waitForTCP(address string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", address, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
