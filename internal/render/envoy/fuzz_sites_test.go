package envoy

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// FuzzSiteContent gives a route a fuzzed share of its pool's content. For
// every input the API server would admit, the model accepts it and the
// routing renders and passes the real `envoy --mode validate`; for every
// input the model accepts, each site header the route sets holds only what
// the workers' nginx takes (the API's grammar), and every route to the
// pool removes a client's own.
func FuzzSiteContent(f *testing.F) {
	// directory, two default documents ("" none), an error page's status
	// code and path (0: none).
	f.Add("sites/shop", "index.html", "default.htm", int32(404), "/errors/404.html")
	f.Add("", "", "", int32(0), "")
	f.Add("a", "Default.htm", "", int32(503), "/busy.html")
	for _, h := range []string{"..", "../x", "a/../..", "/etc", "a//b", "a/", "%2e%2e", `a\b`, "a b", "a\nb", "a\r\nX-Evil: 1", "a\x00b",
		"%START_TIME%", "%REQ(host)%", "a;b", "\xff", strings.Repeat("a", 300), "."} {
		f.Add(h, "index.html", "", int32(404), "/404.html")
		f.Add("a", h, h, int32(404), "/404.html")
		f.Add("a", "index.html", "", int32(404), h)
		f.Add("a", "index.html", "", int32(404), "/"+h)
	}
	f.Add("a", "index.html", "", int32(200), "/ok.html")
	f.Add("a", "index.html", "", int32(-1), "/x")

	segment := `[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*`
	grammar := map[string]*regexp.Regexp{
		vocabulary.SiteDirectoryHeader:  regexp.MustCompile(`^` + segment + `(/` + segment + `)*$`),
		vocabulary.SiteDocumentsHeader:  regexp.MustCompile(`^` + segment + `( ` + segment + `)*$`),
		vocabulary.SiteErrorPagesHeader: regexp.MustCompile(`^[0-9]{3}=(/` + segment + `)+( [0-9]{3}=(/` + segment + `)+)*$`),
	}
	f.Fuzz(func(t *testing.T, directory, doc1, doc2 string, code int32, page string) {
		c := v1.RouteContent{Directory: v1.ContentDirectory(directory)}
		for _, d := range []string{doc1, doc2} {
			if d != "" {
				c.DefaultDocuments = append(c.DefaultDocuments, v1.DocumentName(d))
			}
		}
		if code != 0 {
			c.ErrorPages = []v1.ErrorPage{{StatusCode: code, Path: v1.ContentPath(page)}}
		}
		wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: "ns"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
			{Name: "s", Hosts: []v1.Hostname{"a.example"}, Routes: []v1.Route{{AppPool: "p", Content: c}, {PathPrefix: "/plain", AppPool: "p"}}},
		}}}
		admitted := apiAdmitsContent(c)
		farm, err := model.ResolveFarm(wf, model.Platform{XDSHost: "xds.example", XDSPort: 18000})
		if err != nil {
			if admitted {
				t.Fatalf("the model refused content the API server admits: %v", err)
			}
			return
		}
		pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "c"}}}}, farm.Platform)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := renderAndCheck(t, farm, map[string]model.Pool{"p": pool},
			endpoints.Backends{vocabulary.PoolCluster("p"): {{Address: "10.0.0.1", Port: 8080}}}, admitted)
		if !ok {
			t.Fatal("FarmRouting refused content the model accepts")
		}
		for _, vh := range r.Routes[0].VirtualHosts {
			for _, route := range vh.Routes {
				if route.GetRoute() == nil {
					continue
				}
				if strings.Join(route.RequestHeadersToRemove, ",") != strings.Join(vocabulary.SiteHeaders, ",") {
					t.Fatalf("route %s keeps a client's site headers: removes %v", route.Match, route.RequestHeadersToRemove)
				}
				for _, h := range route.RequestHeadersToAdd {
					if re, ok := grammar[h.Header.Key]; ok && !re.MatchString(h.Header.Value) {
						t.Fatalf("route %s sends %s: %q, which the workers refuse", route.Match, h.Header.Key, h.Header.Value)
					}
				}
			}
		}
	})
}

// The CRD schema's rules of a route's content (api/v1alpha1's markers).
var (
	contentDirectory = regexp.MustCompile(`^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*(/[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*$`)
	documentName     = regexp.MustCompile(`^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$`)
	contentPath      = regexp.MustCompile(`^(/[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$`)
)

func apiAdmitsContent(c v1.RouteContent) bool {
	if c.Directory != "" && (len(c.Directory) > 253 || !contentDirectory.MatchString(string(c.Directory))) {
		return false
	}
	for i, d := range c.DefaultDocuments {
		if len(d) > 64 || !documentName.MatchString(string(d)) || i > 0 && c.DefaultDocuments[0] == d {
			return false
		}
	}
	for _, p := range c.ErrorPages {
		switch p.StatusCode {
		case http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		default:
			return false
		}
		if len(p.Path) < 2 || len(p.Path) > 253 || !contentPath.MatchString(string(p.Path)) {
			return false
		}
	}
	return true
}
