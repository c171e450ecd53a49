package benchkit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestContent(t *testing.T) {
	a, b := Content("/webbench/512b.html", 512), Content("/webbench/1kb.html", 1024)
	if len(a) != 512 || len(b) != 1024 {
		t.Fatal("a file's content does not have the file's size")
	}
	if string(a[:64]) == string(b[:64]) {
		t.Error("two files start alike: a wrong file would pass the check")
	}
}

func TestWriteContent(t *testing.T) {
	root := t.TempDir()
	if err := WriteContent(root, "/hot/15kb.html", 15*1024); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "hot", "15kb.html"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(Content("/hot/15kb.html", 15*1024)) {
		t.Error("the file on disk is not its content")
	}
}
