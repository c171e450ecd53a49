package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// vocabularies caches GoldenVocabulary by pattern: fuzz targets ask for it
// at every input.
var vocabularies sync.Map

// GoldenVocabulary is the union of the words (directives, filter names)
// that words finds in the test package's golden files matching pattern under
// testdata: everything its renderer writes by itself. Read once per test binary.
func GoldenVocabulary(t testing.TB, pattern string, words func(file []byte) ([]string, error)) map[string]bool {
	t.Helper()
	if v, ok := vocabularies.Load(pattern); ok {
		return v.(map[string]bool)
	}
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files testdata/%s: %v", pattern, err)
	}
	vocabulary := map[string]bool{}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		found, err := words(b)
		if err != nil {
			t.Fatal(fmt.Errorf("%s: %w", name, err))
		}
		for _, w := range found {
			vocabulary[w] = true
		}
	}
	vocabularies.Store(pattern, vocabulary)
	return vocabulary
}
