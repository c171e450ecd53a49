package model_test

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

func farmWithRouteContent(c v1.RouteContent) *v1.WebFarm {
	return &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "hosting", Namespace: "web"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "sites", Content: c}}},
	}}}
}

func TestARoutesContentResolves(t *testing.T) {
	tests := []struct {
		name    string
		content v1.RouteContent
		want    *model.SiteContent
	}{
		{"a route without content serves the pool's root with its defaults", v1.RouteContent{}, nil},
		{"a directory alone keeps the pool's default documents", v1.RouteContent{Directory: "sites/shop"}, &model.SiteContent{Directory: "sites/shop"}},
		{"default documents keep their order", v1.RouteContent{DefaultDocuments: v1.DefaultDocuments{"index.php", "default.htm", "a..b"}},
			&model.SiteContent{DefaultDocuments: []string{"index.php", "default.htm", "a..b"}}},
		{"error pages are sorted by status code", v1.RouteContent{Directory: "shop", ErrorPages: []v1.ErrorPage{{StatusCode: 503, Path: "/busy.html"}, {StatusCode: 404, Path: "/errors/404.html"}}},
			&model.SiteContent{Directory: "shop", ErrorPages: []model.ErrorPage{{StatusCode: 404, Path: "/errors/404.html"}, {StatusCode: 503, Path: "/busy.html"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := model.ResolveFarm(farmWithRouteContent(tt.content), model.Platform{})
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Sites[0].Routes[0].Content; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The API server refuses these; objects built in code do not pass through
// it, and each value reaches a request header that the workers follow.
func TestAContentPathThatWouldLeaveItsFolderIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		content v1.RouteContent
		want    string
	}{
		{"a directory that climbs out of the content", v1.RouteContent{Directory: "../other"}, "directory"},
		{"a directory with a dot segment inside", v1.RouteContent{Directory: "sites/../../etc"}, "directory"},
		{"an absolute directory", v1.RouteContent{Directory: "/etc"}, "directory"},
		{"a directory with an empty segment", v1.RouteContent{Directory: "sites//shop"}, "directory"},
		{"a directory with a trailing slash", v1.RouteContent{Directory: "sites/shop/"}, "directory"},
		{"a directory with a backslash", v1.RouteContent{Directory: `sites\shop`}, "directory"},
		{"a directory with an encoded dot", v1.RouteContent{Directory: "%2e%2e"}, "directory"},
		{"a directory with a space", v1.RouteContent{Directory: "my site"}, "directory"},
		{"a directory over 253 characters", v1.RouteContent{Directory: v1.ContentDirectory(strings.Repeat("a", 254))}, "directory"},
		{"a default document with a slash", v1.RouteContent{DefaultDocuments: v1.DefaultDocuments{"docs/index.html"}}, "defaultDocuments"},
		{"a default document of dots alone", v1.RouteContent{DefaultDocuments: v1.DefaultDocuments{".."}}, "defaultDocuments"},
		{"a default document listed twice", v1.RouteContent{DefaultDocuments: v1.DefaultDocuments{"index.html", "index.html"}}, "listed twice"},
		{"nine default documents", v1.RouteContent{DefaultDocuments: v1.DefaultDocuments{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, "at most 8"},
		{"an error page for a status the worker never answers", v1.RouteContent{ErrorPages: []v1.ErrorPage{{StatusCode: 200, Path: "/ok.html"}}}, "status 200"},
		{"an error page that climbs out of the directory", v1.RouteContent{ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "/../404.html"}}}, "path"},
		{"an error page without a leading slash", v1.RouteContent{ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "404.html"}}}, "path"},
		{"an error page that is a URL elsewhere", v1.RouteContent{ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "http://example.com/"}}}, "path"},
		{"two pages for one status", v1.RouteContent{ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "/a.html"}, {StatusCode: 404, Path: "/b.html"}}}, "two pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.ResolveFarm(farmWithRouteContent(tt.content), model.Platform{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error about %q", err, tt.want)
			}
		})
	}
}

func TestAPoolsDefaultDocumentsResolve(t *testing.T) {
	tests := []struct {
		name    string
		docs    v1.DefaultDocuments
		want    []string
		wantErr string
	}{
		{"a pool without default documents has IIS's usual two", nil, []string{"index.html", "index.htm"}, ""},
		{"a pool's own default documents keep their order", v1.DefaultDocuments{"Default.htm", "index.html"}, []string{"Default.htm", "index.html"}, ""},
		{"a pool's default document with a slash is refused", v1.DefaultDocuments{"a/index.html"}, nil, "content.defaultDocuments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "c"}, DefaultDocuments: tt.docs}}}, model.Platform{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Content.DefaultDocuments, tt.want) {
				t.Errorf("got %v, want %v", p.Content.DefaultDocuments, tt.want)
			}
		})
	}
}
