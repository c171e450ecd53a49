package benchkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Content is a file's body: printable, deterministic and different for every
// file, so that a wrong file is noticed by the checks before the load.
func Content(path string, size int) []byte {
	line := fmt.Sprintf("%s %d bytes of benchmark content\n", path, size)
	return []byte(strings.Repeat(line, size/len(line)+1)[:size])
}

// WriteContent writes a file's Content under root at its URL path, readable
// by nginx workers that run as another user.
func WriteContent(root, path string, size int) error {
	p := filepath.Join(root, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, Content(path, size), 0o644)
}
