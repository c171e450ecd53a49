package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"webfarm.dev/operator/internal/model"
)

func TestAPoolOfContentAloneIsHeldWhenItsConfigMapLacksTheCheckedFile(t *testing.T) {
	pages := map[string]string{"about.html": "about", "style.css": "body {}"}
	for _, tt := range []struct {
		name   string
		app    bool
		path   string
		data   map[string]string
		binary map[string][]byte
		want   string // "" when the pool may start
	}{
		{"a home page check passes with an index.html", false, "/", map[string]string{"index.html": "home"}, nil, ""},
		{"a home page check passes with an index.htm", false, "/", map[string]string{"index.htm": "home"}, nil, ""},
		{"a check of a file the ConfigMap has passes", false, "/about.html", pages, nil, ""},
		{"a check of a binary file the ConfigMap has passes", false, "/logo.png", nil, map[string][]byte{"logo.png": {0x89}}, ""},
		{"a home page check without an index is held, naming a page to check instead", false, "/", pages,
			nil, `content ConfigMap "site" has no index.html or index.htm, which the health check's GET / asks for, so its workers would never pass it: add the file, or set healthCheck.path to one of its files (such as /about.html)`},
		{"a check of a file the ConfigMap lacks is held", false, "/health.html", pages,
			nil, `content ConfigMap "site" has no file health.html, which the health check's GET /health.html asks for`},
		{"a check in a folder is held: a ConfigMap has none", false, "/docs/index.html", pages,
			nil, `content ConfigMap "site" cannot hold docs/index.html (its keys are the files of one folder)`},
		{"a check of a folder is held: a ConfigMap has none", false, "/docs/", pages,
			nil, `cannot hold docs/ (its keys are the files of one folder)`},
		{"an empty ConfigMap says it has no files", false, "/", nil, nil, `set healthCheck.path to one of its files (it has none)`},
		{"a pool with an app is not held: the app answers what the content lacks", true, "/", pages, nil, ""},
		{"a ConfigMap without a page names its first file", false, "/", map[string]string{"b.css": "", "a.js": ""}, nil, `(such as /a.js)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := model.Pool{Content: model.Content{Source: model.ContentConfigMap, Name: "site"}, Health: model.HealthCheck{Path: tt.path}}
			if tt.app {
				pool.App = &model.App{Image: "registry.example.com/shop:1", Port: 3000}
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Data: tt.data, BinaryData: tt.binary}
			got := checkedFileMissing(pool, cm)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
