package testutil

import (
	"strings"
	"testing"
)

// ExpectText fails the test for each string of contains that text lacks and
// each of lacks that it has; what names the text in the messages.
func ExpectText(t testing.TB, what, text string, contains, lacks []string) {
	t.Helper()
	for _, s := range contains {
		if !strings.Contains(text, s) {
			t.Errorf("%s lacks %q", what, s)
		}
	}
	for _, s := range lacks {
		if strings.Contains(text, s) {
			t.Errorf("%s still has %q", what, s)
		}
	}
}
