package nginx_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil/localpool"
)

// A pool's workers send each file with its media type from the full table:
// those earlier releases sent as application/octet-stream among them.
// Real nginx, as rendered, with the table beside its config.
func TestAPoolsWorkersSendEachFilesMediaType(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"an MP4 video is video/mp4", "clip.mp4", "video/mp4"},
		{"a WebM video is video/webm", "clip.webm", "video/webm"},
		{"a WebAssembly module is application/wasm", "module.wasm", "application/wasm"},
		{"an AVIF image is image/avif", "photo.avif", "image/avif"},
		{"a ZIP archive is application/zip", "archive.zip", "application/zip"},
		{"a CSV table is text/csv", "table.csv", "text/csv"},
		{"an MP3 song is audio/mpeg", "song.mp3", "audio/mpeg"},
		{"a script is text/javascript (RFC 9239)", "app.js", "text/javascript"},
		{"an HTML page is text/html", "page.html", "text/html"},
		{"an uppercase extension is the same type", "PHOTO.AVIF", "image/avif"},
		{"an unknown extension is application/octet-stream", "data.unknown-extension", "application/octet-stream"},
	}
	files := map[string]string{"index.html": "home\n"}
	for _, tt := range tests {
		files[tt.file] = tt.name + "\n"
	}
	worker := localpool.StartWithContent(t, basePool(), files)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(worker.URL + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || got != tt.want {
				t.Errorf("got %d %q, want 200 %q", resp.StatusCode, got, tt.want)
			}
		})
	}
}

// The table lists each extension once: nginx keeps the last of a duplicate
// (with a warning), the generator the first, as the source orders them.
func TestTheMediaTypeTableListsEachExtensionOnce(t *testing.T) {
	table := nginx.PoolScripts(model.Pool{})[nginx.MimeTypesFile]
	seen := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(table))
	for sc.Scan() {
		fields := strings.Fields(strings.TrimSuffix(sc.Text(), ";"))
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || fields[0] == "types" {
			continue
		}
		for _, ext := range fields[1:] {
			if other, ok := seen[ext]; ok {
				t.Errorf("extension %q is %s and %s", ext, other, fields[0])
			}
			seen[ext] = fields[0]
		}
	}
	if len(seen) < 1000 {
		t.Errorf("the table has %d extensions; the full table has over 1,000", len(seen))
	}
}
