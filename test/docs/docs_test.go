// Package docs checks the repository's documentation against the repository:
// every relative link resolves to a file and heading, and every path the
// architecture document names exists.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// documents are the Markdown files a reader follows links through.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "bench", "README.md"))
}

var (
	fence      = regexp.MustCompile("(?s)```.*?```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+)$`)
	notInSlug  = regexp.MustCompile(`[^\w\- ]`)
)

// prose is a document without its code, where links are not links.
func prose(text string) string {
	return inlineCode.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// anchors are the GitHub anchors of a document's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		slug := notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEveryRelativeLinkInTheDocsLeadsToAFileAndHeadingOfTheRepository(t *testing.T) {
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range documents(t) {
		for _, m := range link.FindAllStringSubmatch(prose(read(t, doc)), -1) {
			url := m[1]
			if strings.Contains(url, "://") || strings.HasPrefix(url, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(url, "#")
			target := doc
			if path != "" {
				target = filepath.Join(filepath.Dir(doc), path)
			}
			abs, err := filepath.Abs(target)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(abs, repo+string(filepath.Separator)) {
				t.Errorf("%s links outside the repository: %s", doc, url)
				continue
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to a missing file: %s", doc, url)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchors(read(t, target))[anchor] {
				t.Errorf("%s links to a missing heading: %s", doc, url)
			}
		}
	}
}

// repositoryPath is a path of the repository in backquotes, optionally with
// a Go identifier after it (`internal/lifecycle.Decide`).
var repositoryPath = regexp.MustCompile("`((?:api|bench|charts|cmd|config|controllers|docs|hack|internal|test)/[\\w./-]*?)(?:\\.[A-Z]\\w*)?`")

func TestEveryPathTheArchitectureNamesExists(t *testing.T) {
	text := read(t, filepath.Join(root, "docs", "architecture.md"))
	paths := repositoryPath.FindAllStringSubmatch(text, -1)
	if len(paths) < 20 {
		t.Fatalf("found %d repository paths in docs/architecture.md; the pattern no longer matches how it names them", len(paths))
	}
	for _, m := range paths {
		// internal/render/... is Go's pattern for the folder and those below it.
		if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(m[1], "/..."))); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist", m[1])
		}
	}
	if strings.Contains(text, "](../../") || strings.Contains(text, "`../") {
		t.Error("docs/architecture.md points outside the repository")
	}
}
