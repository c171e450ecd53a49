// Package nginx renders nginx.conf for pool workers and cache tiers from the
// model. Every value written into a config is a number, a fixed keyword, or a
// name the model has validated (pool names are DNS labels, addresses are IPs):
// nothing from a custom resource reaches nginx as free text.
package nginx

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"text/template"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Ports and paths shared with the Kubernetes renderer: the pod spec mounts and
// probes what this config expects.
const (
	HTTPPort   = 8080 // the worker's or cache's HTTP port
	StatusPort = 8081 // stub_status and the liveness endpoint, never routed
	// H2CPort takes HTTP/2 without TLS from the frontend, in the workers of
	// a pool whose app speaks HTTP/2 or gRPC.
	H2CPort     = 8084
	ConfigDir   = "/etc/webfarm"
	ConfigFile  = "nginx.conf"
	ContentDir  = "/srv/www"
	TmpDir      = "/tmp"
	CacheDir    = "/tmp/cache"
	statusPath  = "/nginx_status"
	LivenessURI = "/healthz"

	// QueueScriptFile is the njs script beside nginx.conf that checks a
	// request's time in the queue (a relative js_import resolves against
	// the directory of nginx.conf).
	QueueScriptFile = "queue.js"
	// The cache tier's agent, in the same pod: misses go through it on the
	// loopback, nginx logs each request's cache status to its socket, and
	// the operator reads its counters and asks for purges on its admin port
	// (vocabulary.AgentAdminPort), and its configuration file is
	// vocabulary.AgentConfigFile.
	AgentProxyPort = 8082
	AgentLogSocket = TmpDir + "/cache-agent.sock"

	// njsModule is where Debian's libnginx-mod-http-js puts the module, in
	// the nginx image and on the machines that check configs.
	njsModule = "/usr/lib/nginx/modules/ngx_http_js_module.so"

	// AppUnreachableBody answers a request the worker could not pass to its
	// app (nginx's own 502: the app crashed or is restarting).
	AppUnreachableBody = "Bad Gateway: the application pool's worker cannot reach its application.\n"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

//go:embed scripts/queue.js
var queueScript string

// mimeTypes is the pool workers' table of media types, generated from
// Debian's media-types by hack/mimetypes (make mime-types).
//
//go:embed mime.types
var mimeTypes string

// MimeTypesFile is the table of media types beside a pool's nginx.conf.
const MimeTypesFile = "mime.types"

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"seconds":  seconds,
	"hostPort": hostPort[int32],
	"mapKey":   mapKey,
	"quoted":   quoted,
}).ParseFS(templateFS, "templates/*.tmpl"))

// PoolConfig renders the nginx.conf of an AppPool's workers.
func PoolConfig(p model.Pool) (string, error) {
	return render("pool.tmpl", poolData{
		Pool:               p,
		Workers:            workerProcesses(p.CPUMilli),
		WorkerConnections:  workerConnections(p.MaxConcurrentRequests),
		Queue:              queueTimeout(p),
		HTTP2:              p.HTTP2(),
		H2CPort:            H2CPort,
		ProxyTimeout:       model.LongestFrontendTimeout,
		ShutdownTimeout:    ShutdownTimeout(p),
		Common:             poolCommon(),
		AppUnreachableBody: AppUnreachableBody,
		Sites:              sites(p.Content),
	})
}

// sitesData is what nginx.conf needs to serve many sites from one pool's
// content: the grammar the frontend's site headers must match, and the
// pool's own default documents for the headers' absence.
type sitesData struct {
	Segment, Directory                        string
	DirectoryVar, DocumentsVar, ErrorPagesVar string
	// Documents are the index directive's slots, one per document a site
	// may name.
	Documents  []documentSlot
	ErrorPages []int32
}

type documentSlot struct {
	Slot int
	// PoolDefault is the pool's document of the slot, or its last one.
	PoolDefault string
}

// sites is nil for a pool without content.
func sites(c model.Content) *sitesData {
	if c.Source == model.ContentNone {
		return nil
	}
	docs := c.DefaultDocuments
	if len(docs) == 0 {
		docs = model.DefaultDocuments
	}
	out := &sitesData{
		Segment:       model.ContentSegment,
		Directory:     model.ContentSegment + "(?:/" + model.ContentSegment + ")*",
		DirectoryVar:  headerVar(vocabulary.SiteDirectoryHeader),
		DocumentsVar:  headerVar(vocabulary.SiteDocumentsHeader),
		ErrorPagesVar: headerVar(vocabulary.SiteErrorPagesHeader),
		ErrorPages:    model.ErrorPageCodes,
	}
	for i := range model.MaxDefaultDocuments {
		out.Documents = append(out.Documents, documentSlot{Slot: i + 1, PoolDefault: docs[min(i, len(docs)-1)]})
	}
	return out
}

// ShutdownTimeout is how long a quitting pool worker keeps the connections
// it still has, open WebSockets above all, before it closes them: nginx
// quits after its drain pause, shorter than the app's, and must be done
// before the pool's shutdown time limit, when the kubelet kills what is
// left. Ending when the app's drain pause would be as long again leaves it
// that margin (a 30 s limit gives 20 s).
func ShutdownTimeout(p model.Pool) time.Duration {
	return max(time.Second, p.Health.ShutdownTimeLimit-model.WorkerDrainPause)
}

// PoolScripts are the files nginx.conf of a pool needs beside it, by name:
// the table of media types, and the queue timeout's script when the pool
// has a timeout.
func PoolScripts(p model.Pool) map[string]string {
	files := map[string]string{MimeTypesFile: mimeTypes}
	if p.QueueTimeout > 0 {
		files[QueueScriptFile] = queueScript
	}
	return files
}

// queueTimeoutData is what nginx.conf needs to refuse a request that waited
// too long: nothing when the pool has no timeout.
type queueTimeoutData struct {
	Millis     int64
	Module     string
	Script     string
	StatusCode int
}

func queueTimeout(p model.Pool) *queueTimeoutData {
	if p.QueueTimeout <= 0 {
		return nil
	}
	return &queueTimeoutData{
		Millis:     p.QueueTimeout.Milliseconds(),
		Module:     njsModule,
		Script:     QueueScriptFile,
		StatusCode: model.QueueTimeoutStatus,
	}
}

// CacheConfig renders the nginx.conf of a CachePolicy's cache tier.
func CacheConfig(c model.Cache) (string, error) {
	return render("cache.tmpl", cacheData{
		Cache:             c,
		Workers:           workerProcesses(c.CPUMilli),
		WorkerConnections: 4096,
		KeysZoneMegabytes: keysZoneMegabytes(c.MemorySizeBytes),
		EvictAboveBytes:   evictAbove(c.MemorySizeBytes),
		PoolHeaderVar:     "$http_" + headerVar(vocabulary.PoolHeader),
		AdmitHeaderVar:    headerVar(vocabulary.CacheAdmitHeader),
		KeyHeader:         vocabulary.CacheKeyHeader,
		LookupHeader:      vocabulary.CacheLookupHeader,
		AdmitHeader:       vocabulary.CacheAdmitHeader,
		AgentProxyAddress: hostPort("127.0.0.1", AgentProxyPort),
		AgentLogSocket:    AgentLogSocket,
		SiteKey:           siteKey(),
		Common:            common(),
	})
}

// CacheAgentConfig renders the configuration of a cache tier's agent.
func CacheAgentConfig(c model.Cache) (string, error) {
	cfg := vocabulary.AgentConfig{
		FrequentHitThreshold: int(c.FrequentHitThreshold),
		FrequentHitPeriod:    vocabulary.Duration(c.FrequentHitPeriod),
		MaxObjectSizeBytes:   c.MaxObjectSizeBytes,
		MemorySizeBytes:      c.MemorySizeBytes,
		CacheDir:             CacheDir,
		LogSocket:            AgentLogSocket,
		NginxStatusURL:       "http://" + hostPort("127.0.0.1", StatusPort) + statusPath,
		ProxyAddress:         hostPort("127.0.0.1", AgentProxyPort),
		AdminAddress:         fmt.Sprintf(":%d", vocabulary.AgentAdminPort),
		AdminToken:           c.AdminToken,
		Upstreams:            map[string]string{},
	}
	for _, u := range c.Upstreams {
		cfg.Upstreams[u.Pool] = hostPort(u.Address, u.Port)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	return string(b) + "\n", err
}

// mapKey writes a name as a map key: a name that is one of map's own
// parameters takes a backslash (which map removes); any other keeps none,
// since nginx reads a backslash before t, r or n as a control character.
func mapKey(name string) string {
	switch name {
	case "default", "hostnames", "include", "volatile":
		return `\` + name
	}
	return name
}

// headerVar is the nginx variable suffix of a header ("X-A-B" -> "x_a_b").
func headerVar(name string) string { return strings.ReplaceAll(strings.ToLower(name), "-", "_") }

type commonData struct {
	HTTPPort, StatusPort         int
	ContentDir, TmpDir, CacheDir string
	StatusPath, LivenessURI      string
	// MimeTypesFile: the full table of media types, beside nginx.conf
	// (empty: a short table, for a cache tier, which passes its pools'
	// types on).
	MimeTypesFile string
}

func common() commonData {
	return commonData{HTTPPort, StatusPort, ContentDir, TmpDir, CacheDir, statusPath, LivenessURI, ""}
}

func poolCommon() commonData {
	c := common()
	c.MimeTypesFile = MimeTypesFile
	return c
}

type poolData struct {
	model.Pool
	Workers           int64
	WorkerConnections int64
	Queue             *queueTimeoutData
	HTTP2             bool
	H2CPort           int
	ProxyTimeout      time.Duration
	ShutdownTimeout   time.Duration
	Common            commonData
	// AppUnreachableBody: see the constant.
	AppUnreachableBody string
	// Sites: nil for a pool without content.
	Sites *sitesData
}

type cacheData struct {
	model.Cache
	Workers           int64
	WorkerConnections int64
	KeysZoneMegabytes int64
	EvictAboveBytes   int64
	PoolHeaderVar     string
	AdmitHeaderVar    string
	KeyHeader         string
	LookupHeader      string
	AdmitHeader       string
	AgentProxyAddress string
	AgentLogSocket    string
	// SiteKey is the part of a cache key that tells sites apart on one
	// pool and host.
	SiteKey string
	Common  commonData
}

// siteKey joins the site headers' values, each ended by "|", which none
// of them holds.
func siteKey() string {
	var b strings.Builder
	for _, h := range vocabulary.SiteHeaders {
		b.WriteString("$http_" + headerVar(h) + "|")
	}
	return b.String()
}

func render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return b.String(), nil
}

// workerProcesses gives one nginx worker per whole CPU the pod may use, at least one.
func workerProcesses(cpuMilli int64) int64 {
	return max(1, int64(math.Ceil(float64(cpuMilli)/1000)))
}

// workerConnections leaves room for the upstream connection each proxied request
// needs, plus keep-alive connections from the frontend.
func workerConnections(maxConcurrent int32) int64 {
	return max(1024, 2*int64(maxConcurrent)+256)
}

// keysZoneMegabytes sizes the shared-memory key index: nginx stores about 8,000
// keys per megabyte; plan for the memory filled with the smallest useful objects (1 KiB).
func keysZoneMegabytes(memoryBytes int64) int64 {
	keys := memoryBytes / 1024
	return max(1, (keys+7999)/8000)
}

// evictAbove is nginx's max_size: its cache manager, which wakes every few
// seconds, evicts the least recently used entries down to 80 % of
// memorySize, while the agent admits nothing past memorySize meanwhile.
func evictAbove(memoryBytes int64) int64 { return memoryBytes / 10 * 8 }

// hostPort writes an address and port as nginx reads them ("[fd00::1]:80"
// for IPv6).
func hostPort[P int | int32](address string, port P) string {
	return net.JoinHostPort(address, strconv.Itoa(int(port)))
}

// quoted writes one of the renderer's fixed texts (never a user's: it has
// no "$", which nginx would read as a variable) as an nginx string literal.
func quoted(text string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(text) + `"`
}

// seconds writes a duration as whole seconds (nginx's "s" unit), rounding up.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(math.Ceil(d.Seconds())))
}
