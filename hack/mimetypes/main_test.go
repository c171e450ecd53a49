package main

import (
	"strings"
	"testing"
)

func TestTheTableKeepsEachExtensionsFirstTypeInTheSourcesOrder(t *testing.T) {
	tests := []struct{ name, source, want string }{
		{"types without extensions and comments are left out", "# a comment\napplication/json\t\tjson\ntext/plain\n", "    application/json json;\n"},
		{"an extension under two types keeps the first", "application/x-sh\tsh\ntext/x-sh\tsh\n", "    application/x-sh sh;\n"},
		{"extensions are lowercase", "image/avif\tAVIF hif\n", "    image/avif avif hif;\n"},
		{"nothing nginx would read as syntax passes", "text/a\ta;b ok\ntext/b$\tb\n", "    text/a ok;\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if err := write(&out, strings.NewReader(tt.source), "1.0"); err != nil {
				t.Fatal(err)
			}
			body := out.String()[strings.Index(out.String(), "types {\n")+len("types {\n"):]
			if got := strings.TrimSuffix(body, "}\n"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
