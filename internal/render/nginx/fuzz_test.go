package nginx_test

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
)

// The fuzz targets build custom resources from fuzzed fields, resolve them
// as the controllers do and render the result. Two invariants:
//
//   - structure, for every input the model accepts: the config parses, every
//     directive (by its enclosing blocks) is one the renderer emits for the
//     golden files, and the config has the same statements as the one
//     rendered from the same model with every name replaced by a plain
//     placeholder, so no user string can add or change a statement;
//   - `nginx -t` passes, for every input the API server would also admit
//     (apiAdmits* mirror the CRD schema): the rest never reach the operator.

// hostile strings seed every string field.
var hostile = []string{
	"a\nb", "a;b", "a{b", "a}b", `a"b`, "a'b", "a$b", "a#b", "a\x00b", "a b", `a\b`,
	"x;\ninclude /etc/passwd;", "x\nload_module /tmp/evil.so;", "lua_code_cache off;",
	`"@type"`, "}\nserver { listen 80; }\n#", "${x}", strings.Repeat("a", 10000), "",
}

func FuzzPoolConfig(f *testing.F) {
	// name, namespace, content kind (0 none, 1 ConfigMap, 2 image, 3 claim;
	// plus 4: the app speaks HTTP2, plus 8: GRPC),
	// content name, image path, app image ("" no app), app port, cpu, memory,
	// max concurrent requests, queue timeout, CPU throttle percent (0: no limit),
	// the content's default documents (space-separated).
	f.Add("shop", "web", uint8(1), "shop-content", "", "", int32(0), "500m", "128Mi", int32(100), "", int32(0), "")
	f.Add("shop", "web", uint8(1), "shop-content", "", "registry.example.com/shop:2.1", int32(3000), "2500m", "512Mi", int32(2000), "1500ms", int32(0), "")
	f.Add("api", "prod", uint8(0), "", "", "registry.example.com/api@sha256:abc", int32(9000), "4", "1Gi", int32(100000), "1h", int32(50), "")
	f.Add("images", "web", uint8(2), "registry.example.com/site:1.4", "/content", "", int32(0), "10m", "16Mi", int32(1), "100ms", int32(1), "")
	f.Add("docs", "web", uint8(3), "docs-claim", "", "", int32(0), "64", "64Gi", int32(0), "0s", int32(100), "")
	f.Add("api", "web", uint8(5), "api-content", "", "registry.example.com/api:1", int32(9000), "500m", "128Mi", int32(100), "1s", int32(0), "")
	f.Add("greeter", "web", uint8(8), "", "", "registry.example.com/greeter:1", int32(8084), "500m", "128Mi", int32(2), "", int32(0), "")
	f.Add("sites", "web", uint8(1), "sites", "", "", int32(0), "", "", int32(0), "", int32(0), "Default.htm default.aspx index.html a..b ~x")
	f.Add("sites", "web", uint8(1), "sites", "", "", int32(0), "", "", int32(0), "", int32(0), ".. . ../x a/b @app $x \\x index.html")
	// One field hostile at a time: a refused field would hide the others.
	for _, h := range hostile {
		f.Add("shop", "web", uint8(1), "c", "", "", int32(0), "", "", int32(0), "", int32(0), h)
		f.Add(h, "web", uint8(1), "c", "", "", int32(0), "", "", int32(0), "", int32(0), "")
		f.Add("shop", h, uint8(1), "c", "", "", int32(0), "", "", int32(0), "", int32(0), "")
		f.Add("shop", "web", uint8(1), h, "", h, int32(3000), "", "", int32(0), "", int32(0), "")
		f.Add("shop", "web", uint8(2), h, h, "", int32(0), "", "", int32(0), "", int32(0), "")
		f.Add("shop", "web", uint8(3), h, "", "", int32(0), "", "", int32(0), h, int32(0), "")
		f.Add("shop", "web", uint8(1), "c", "", "", int32(0), h, h, int32(0), "", int32(0), "")
	}
	f.Add("shop", "web", uint8(1), "c", "", "app", int32(8080), "1e18", "-1", int32(2147483647), "2562047h", int32(2147483647), "")
	f.Add("shop", "web", uint8(1), "c", "", "app", int32(-2147483648), "-64", "1E", int32(-2147483648), "-1s", int32(-2147483648), "")

	f.Fuzz(func(t *testing.T, name, namespace string, contentKind uint8, contentName, imagePath, appImage string,
		appPort int32, cpu, memory string, maxConcurrent int32, queueTimeout string, throttle int32, documents string) {
		ap := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		s := &ap.Spec
		switch contentKind % 4 {
		case 1:
			s.Content = &v1.Content{ConfigMap: v1.ConfigMapContent{Name: v1.ObjectName(contentName)}}
		case 2:
			s.Content = &v1.Content{Image: v1.ImageContent{Reference: contentName, Path: imagePath}}
		case 3:
			s.Content = &v1.Content{PersistentVolumeClaim: v1.PersistentVolumeClaimContent{ClaimName: contentName}}
		}
		if s.Content != nil {
			for _, d := range strings.Fields(documents) {
				s.Content.DefaultDocuments = append(s.Content.DefaultDocuments, v1.DocumentName(d))
			}
		}
		if appImage != "" {
			s.App = v1.AppContainer{Image: appImage, Port: appPort,
				Protocol: []v1.AppProtocol{"", v1.AppProtocolHTTP2, v1.AppProtocolGRPC}[contentKind/4%3]}
			if s.App.Protocol != "" {
				s.Idle.OnDemandStart = new(false)
			}
		}
		var ok bool
		if s.CPU, ok = quantity(cpu); !ok {
			return // not a quantity: the API server cannot store it
		}
		if s.Memory, ok = quantity(memory); !ok {
			return
		}
		s.MaxConcurrentRequests = maxConcurrent
		s.Queue.Timeout = v1.Duration(queueTimeout)
		if throttle != 0 {
			s.CPULimit = v1.CPULimit{Percent: throttle, Action: v1.CPULimitThrottle}
		}
		p, err := model.ResolvePool(ap, model.Platform{})
		if err != nil {
			return
		}
		conf, err := nginx.PoolConfig(p)
		if err != nil {
			t.Fatalf("the model accepted the pool but the renderer failed: %v", err)
		}
		reference, err := nginx.PoolConfig(testutil.PlainPool(p))
		if err != nil {
			t.Fatal(err)
		}
		checkStructure(t, conf, reference)
		if apiAdmitsPool(ap) {
			nginxCheckOnce(t, conf, nginx.PoolScripts(p))
		}
	})
}

func FuzzCacheConfig(f *testing.F) {
	// name, namespace, frequent-hit threshold, frequent-hit period, object
	// TTL, max object size, memory size, cache query strings, client cache
	// mode, client max age, cpu, then two upstreams' pool name, Service
	// address and port ("" pool name: no upstream).
	f.Add("static", "web", int32(2), "10s", "30s", "256Ki", "64Mi", false, "", "", "500m", "images", "10.96.0.21", int32(80), "www", "10.96.0.22", int32(80))
	f.Add("static", "web", int32(1), "1s", "720h", "1Ki", "64Gi", true, "UseMaxAge", "8760h", "64", "a", "10.0.0.1", int32(1), "", "", int32(0))
	f.Add("edge", "prod", int32(1000), "24h", "1s", "1Mi", "1Mi", false, "UseExpires", "1s", "10m", "images", "192.168.1.1", int32(65535), "", "", int32(0))
	f.Add("edge", "prod", int32(0), "", "", "", "", false, "DisableCache", "", "", "", "", int32(0), "", "", int32(0))
	for _, h := range hostile {
		f.Add(h, "web", int32(2), "", "", "", "", false, "", "", "", "a", "10.0.0.1", int32(80), "", "", int32(0))
		f.Add("static", h, int32(2), "", "", "", "", false, "", "", "", "a", "10.0.0.1", int32(80), "", "", int32(0))
		f.Add("static", "web", int32(2), h, h, "", "", false, h, h, "", "a", "10.0.0.1", int32(80), "", "", int32(0))
		f.Add("static", "web", int32(2), "", "", h, h, false, "", "", h, "a", "10.0.0.1", int32(80), "", "", int32(0))
		f.Add("static", "web", int32(2), "", "", "", "", false, "", "", "", h, "10.0.0.1", int32(80), "b", h, int32(80))
	}
	f.Add("static", "web", int32(2147483647), "2562047h", "2562047h", "8E", "8E", false, "UseMaxAge", "2562047h", "1e18", "a", "10.0.0.1; evil", int32(-1), "b", "::ffff:10.0.0.1", int32(2147483647))
	f.Add("static", "web", int32(-2147483648), "-1s", "1ns", "-1", "-1Gi", true, "UseExpires", "0s", "-1", "a", "10.0.0.1", int32(0), "b", "10.0.0.2", int32(-2147483648))

	f.Fuzz(func(t *testing.T, name, namespace string, threshold int32, hitPeriod, ttl, maxObject, memory string,
		queryStrings bool, mode, maxAge, cpu string,
		pool1, addr1 string, port1 int32, pool2, addr2 string, port2 int32) {
		cp := &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		s := &cp.Spec
		s.FrequentHitThreshold = threshold
		s.FrequentHitPeriod = v1.Duration(hitPeriod)
		s.ObjectTTL = v1.Duration(ttl)
		for field, value := range map[**resource.Quantity]string{&s.MaxObjectSize: maxObject, &s.MemorySize: memory, &s.CPU: cpu} {
			var ok bool
			if *field, ok = quantity(value); !ok {
				return
			}
		}
		s.CacheQueryStrings = &queryStrings
		s.ClientCache = v1.ClientCache{Mode: v1.ClientCacheMode(mode), MaxAge: v1.Duration(maxAge)}
		var upstreams []model.Upstream
		if pool1 != "" {
			upstreams = append(upstreams, model.Upstream{Pool: pool1, Address: addr1, Port: port1})
		}
		if pool2 != "" {
			upstreams = append(upstreams, model.Upstream{Pool: pool2, Address: addr2, Port: port2})
		}
		c, err := model.ResolveCache(cp, upstreams, model.Platform{})
		if err != nil {
			return
		}
		conf, err := nginx.CacheConfig(c)
		if err != nil {
			t.Fatalf("the model accepted the cache policy but the renderer failed: %v", err)
		}
		reference, err := nginx.CacheConfig(testutil.PlainCache(c))
		if err != nil {
			t.Fatal(err)
		}
		checkStructure(t, conf, reference)
		if apiAdmitsCache(cp) && upstreamsPlausible(upstreams) {
			nginxCheckOnce(t, conf)
		}
	})
}

// checkStructure fails the test when conf has a statement the renderer never
// emits, or differs in its statements from reference, the same model's
// config with plain names.
func checkStructure(t *testing.T, conf, reference string) {
	t.Helper()
	got, err := testutil.NginxStatements(conf)
	if err != nil {
		t.Fatalf("the rendered config does not parse: %v\n%s", err, excerpt(conf))
	}
	// The golden files' directives: everything the renderer writes by itself.
	allowed := testutil.NginxEmittedDirectives(t, "*.conf")
	for _, s := range got {
		if !allowed[s.Path] {
			t.Fatalf("the rendered config has %q, which the renderer never emits by itself\n%s", s.Path, excerpt(conf))
		}
	}
	want, err := testutil.NginxStatements(reference)
	if err != nil {
		t.Fatalf("the reference config does not parse: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a user string changed the config's statements:\n got %v\nwant %v\n%s", got, want, excerpt(conf))
	}
}

// nginxChecked holds the hashes of configs nginx already accepted: a fuzz
// worker renders the same config for many inputs, and nginx -t takes tens
// of milliseconds.
var nginxChecked sync.Map

func nginxCheckOnce(t *testing.T, conf string, beside ...map[string]string) {
	t.Helper()
	h := sha256.New()
	h.Write([]byte(conf))
	for _, files := range beside {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			fmt.Fprintf(h, "\x00%s\x00%s", name, files[name])
		}
	}
	key := string(h.Sum(nil))
	if _, done := nginxChecked.Load(key); done {
		return
	}
	testutil.NginxCheck(t, conf, beside...)
	nginxChecked.Store(key, true)
}

// quantity parses a fuzzed quantity; "" is an unset field.
func quantity(s string) (*resource.Quantity, bool) {
	if s == "" {
		return nil, true
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, false
	}
	return &q, true
}

func excerpt(conf string) string {
	if len(conf) > 4000 {
		return conf[:4000] + "\n..."
	}
	return conf
}

// The CRD schema's rules for the fields the targets fuzz (api/v1alpha1's
// markers), and the API server's rules for object names.
var (
	imageRef  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)
	imagePath = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)
	// DocumentName's pattern.
	documentName = regexp.MustCompile(`^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$`)
	claimName    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

func objectName(s string, maxLen int) bool { return testutil.SchemaName(s, maxLen) }

func durationIn(d v1.Duration, lo, hi time.Duration) bool {
	return testutil.SchemaDuration(string(d), lo, hi)
}

// quantityIn: unset, or within [lo, hi] ("" hi: no upper bound).
func quantityIn(q *resource.Quantity, lo, hi string) bool {
	if q == nil || q.IsZero() {
		return true
	}
	if q.Cmp(resource.MustParse(lo)) < 0 {
		return false
	}
	return hi == "" || q.Cmp(resource.MustParse(hi)) <= 0
}

func apiAdmitsPool(ap *v1.AppPool) bool {
	s := ap.Spec
	if !objectName(ap.Name, 50) || !objectName(ap.Namespace, 63) {
		return false
	}
	if c := s.Content; c != nil {
		// An unset source is its zero value, left out of the JSON.
		hasConfigMap := c.ConfigMap != (v1.ConfigMapContent{})
		hasImage := c.Image != (v1.ImageContent{})
		hasClaim := c.PersistentVolumeClaim != (v1.PersistentVolumeClaimContent{})
		switch {
		case btoi(hasConfigMap)+btoi(hasImage)+btoi(hasClaim) != 1,
			hasConfigMap && !objectName(string(c.ConfigMap.Name), 63),
			hasImage && (len(c.Image.Reference) > 512 || !imageRef.MatchString(c.Image.Reference) ||
				len(c.Image.Path) > 256 || c.Image.Path != "" && !imagePath.MatchString(c.Image.Path)),
			hasClaim && (len(c.PersistentVolumeClaim.ClaimName) > 253 || !claimName.MatchString(c.PersistentVolumeClaim.ClaimName)),
			len(c.DefaultDocuments) > 8:
			return false
		}
		for i, d := range c.DefaultDocuments {
			if len(d) > 64 || !documentName.MatchString(string(d)) || slices.Contains(c.DefaultDocuments[:i], d) {
				return false
			}
		}
	}
	if a := s.App; a.Image != "" && (len(a.Image) > 512 || !imageRef.MatchString(a.Image) ||
		a.Port < 1024 || a.Port > 65535 || a.Port == 8080 || a.Port == 8081 ||
		a.Port == 8084 && a.Protocol != "" && a.Protocol != v1.AppProtocolHTTP) {
		return false
	}
	if l := s.CPULimit; l != (v1.CPULimit{}) && (l.Percent < 1 || l.Percent > 100) {
		return false
	}
	return quantityIn(s.CPU, "10m", "64") && quantityIn(s.Memory, "16Mi", "") &&
		s.MaxConcurrentRequests >= 0 && s.MaxConcurrentRequests <= 100000 &&
		durationIn(s.Queue.Timeout, 100*time.Millisecond, time.Hour)
}

func apiAdmitsCache(cp *v1.CachePolicy) bool {
	s := cp.Spec
	switch s.ClientCache.Mode {
	case "", v1.ClientCacheNoControl, v1.ClientCacheDisable:
	case v1.ClientCacheMaxAge, v1.ClientCacheExpires:
		if s.ClientCache.MaxAge == "" {
			return false
		}
	default:
		return false
	}
	if s.MaxObjectSize != nil && s.MemorySize != nil && !s.MaxObjectSize.IsZero() && !s.MemorySize.IsZero() && s.MaxObjectSize.Cmp(*s.MemorySize) > 0 {
		return false
	}
	return objectName(cp.Name, 50) && objectName(cp.Namespace, 63) &&
		s.FrequentHitThreshold >= 0 && s.FrequentHitThreshold <= 1000 &&
		durationIn(s.FrequentHitPeriod, time.Second, 24*time.Hour) &&
		durationIn(s.ObjectTTL, time.Second, 720*time.Hour) &&
		durationIn(s.ClientCache.MaxAge, time.Second, 8760*time.Hour) &&
		quantityIn(s.MaxObjectSize, "1Ki", "") && quantityIn(s.MemorySize, "1Mi", "64Gi") &&
		quantityIn(s.CPU, "10m", "64")
}

// upstreamsPlausible: what Kubernetes gives the cache controller, distinct
// AppPools (names are DNS labels) reached at a Service's IP and port.
func upstreamsPlausible(us []model.Upstream) bool {
	seen := map[string]bool{}
	for _, u := range us {
		if !objectName(u.Pool, 50) || seen[u.Pool] || net.ParseIP(u.Address) == nil || u.Port < 1 || u.Port > 65535 {
			return false
		}
		seen[u.Pool] = true
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzSiteHeaders sends the worker's own checks of the frontend's site
// headers (the regexes of the rendered nginx.conf, which PCRE and Go's
// regexp read alike) any value: what they take of it never leads out of
// the folder it starts in. A directory the map takes is names without "."
// or ".." (nginx joins it to the content root), a default document a name
// without a slash, an error page an absolute path of such names.
func FuzzSiteHeaders(f *testing.F) {
	for _, s := range []string{"sites/shop", "..", "a/../..", "%2e%2e", "a//b", "/etc", "a/./b", "...", ".a", `a\..`, "a/..\x00",
		"index.html default.htm", "index.html ../x", "../x index.html", "a/b", ".. .", "404=/errors/404.html 503=/busy.html",
		"404=/../x", "404=/a/../../x", "404=//x", "1404=/x", "404=/a 404=/b", "404=/a\n404=/b", "404=/a%2f..", "502=@app_unreachable"} {
		f.Add(s)
	}
	conf, err := nginx.PoolConfig(basePool())
	if err != nil {
		f.Fatal(err)
	}
	directory := mapRegexes(f, conf, "$webfarm_site_directory")[0]
	documents := mapRegexes(f, conf, "$webfarm_document_")
	pages := mapRegexes(f, conf, "$webfarm_error_page_")
	if len(documents) < model.MaxDefaultDocuments || len(pages) != len(model.ErrorPageCodes) {
		f.Fatalf("found %d document and %d error page regexes in the config", len(documents), len(pages))
	}
	f.Fuzz(func(t *testing.T, value string) {
		if directory.MatchString(value) && !staysInside(value) {
			t.Fatalf("the worker takes site directory %q, which leaves its folder", value)
		}
		for _, re := range documents {
			if m := re.FindStringSubmatch(value); m != nil && (strings.Contains(m[1], "/") || !staysInside(m[1])) {
				t.Fatalf("the worker takes default document %q of %q", m[1], value)
			}
		}
		for _, re := range pages {
			if m := re.FindStringSubmatch(value); m != nil && (!strings.HasPrefix(m[1], "/") || !staysInside(m[1][1:])) {
				t.Fatalf("the worker takes error page %q of %q", m[1], value)
			}
		}
	})
}

// mapRegexes are the regexes of the maps that set the variables named
// (a prefix) in a rendered config, in order.
func mapRegexes(f *testing.F, conf, variable string) []*regexp.Regexp {
	var out []*regexp.Regexp
	inMap := false
	for _, line := range strings.Split(conf, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "map ") && strings.Contains(line, " "+variable):
			inMap = true
		case line == "}":
			inMap = false
		case inMap && strings.HasPrefix(line, `"~`):
			pattern := line[2:strings.LastIndex(line, `"`)]
			out = append(out, regexp.MustCompile(pattern))
		}
	}
	if len(out) == 0 {
		f.Fatalf("no map of %s in the config", variable)
	}
	return out
}

// staysInside: a relative path of names, none empty, "." or "..", nor
// holding anything a file system or nginx reads as more than a name.
func staysInside(rel string) bool {
	for _, name := range strings.Split(rel, "/") {
		if strings.Trim(name, ".") == "" || strings.ContainsAny(name, "\\\x00%$ \t\r\n") {
			return false
		}
	}
	return true
}
